package topic

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	long := strings.Repeat("a", maxLen)
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"simple", "sport/tennis/player1", true},
		{"single level", "sport", true},
		{"separator only, two empty levels", "/", true},
		{"leading separator", "/finance", true},
		{"trailing separator", "finance/", true},
		{"empty level", "a//b", true},
		{"dollar topic is syntactically valid", "$SYS/x", true},
		{"space is a normal character", "sport/ tennis", true},
		{"non-ASCII", "wetter/zürich", true},
		{"max length [MQTT-4.7.3-3]", long, true},

		{"empty [MQTT-4.7.3-1]", "", false},
		{"too long [MQTT-4.7.3-3]", long + "a", false},
		{"plus wildcard [MQTT-3.3.2-2] [MQTT-4.7.1-1]", "sport/+", false},
		{"plus alone [MQTT-3.3.2-2]", "+", false},
		{"hash wildcard [MQTT-3.3.2-2]", "sport/#", false},
		{"hash alone [MQTT-3.3.2-2]", "#", false},
		{"hash inside level [MQTT-3.3.2-2]", "sport/tennis#", false},
		{"plus inside level [MQTT-3.3.2-2]", "sport/+player", false},
		{"U+0000 [MQTT-1.5.4-2] [MQTT-4.7.3-2]", "a/\x00/b", false},
		{"ill-formed UTF-8 [MQTT-1.5.4-1]", "a/\xff", false},
		{"UTF-16 surrogate encoded in UTF-8 [MQTT-1.5.4-1]", "a/\xed\xa0\x80", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidName(tt.in); got != tt.want {
				t.Errorf("ValidName(%q) = %v, want %v", trunc(tt.in), got, tt.want)
			}
		})
	}
}

func TestValidFilter(t *testing.T) {
	long := strings.Repeat("a", maxLen)
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"literal", "sport/tennis/player1", true},
		{"hash alone [MQTT-4.7.1-2]", "#", true},
		{"hash last [MQTT-4.7.1-2]", "sport/tennis/#", true},
		{"hash after empty level", "/#", true},
		{"plus alone [MQTT-4.7.1-3]", "+", true},
		{"plus first level", "+/tennis/#", true},
		{"plus middle level", "sport/+/player1", true},
		{"plus last level", "sport/+", true},
		{"plus both levels", "+/+", true},
		{"plus after separator", "/+", true},
		{"plus on empty-level sides", "+//+", true},
		{"separator only", "/", true},
		{"dollar topic", "$SYS/x", true},
		{"dollar with wildcards", "$SYS/monitor/+", true},
		{"max length [MQTT-4.7.3-3]", long, true},
		{"shared (§4.8.2)", "$share/group/sport/#", true},
		{"shared wildcard only", "$share/g/#", true},
		{"shared plus filter", "$share/g/+/x", true},

		{"empty [MQTT-4.7.3-1]", "", false},
		{"too long [MQTT-4.7.3-3]", long + "a", false},
		{"hash not alone in level [MQTT-4.7.1-2]", "sport/tennis#", false},
		{"hash not last [MQTT-4.7.1-2]", "sport/tennis/#/ranking", false},
		{"hash first of two levels [MQTT-4.7.1-2]", "#/a", false},
		{"hash followed by separator [MQTT-4.7.1-2]", "a/#/", false},
		{"double hash", "##", false},
		{"plus not alone in level [MQTT-4.7.1-3]", "sport/+player", false},
		{"plus suffix [MQTT-4.7.1-3]", "sport+", false},
		{"double plus", "++", false},
		{"plus and hash in one level", "+#", false},
		{"U+0000 [MQTT-1.5.4-2] [MQTT-4.7.3-2]", "a/\x00", false},
		{"ill-formed UTF-8 [MQTT-1.5.4-1]", "\xc3", false},
		{"shared empty share name [MQTT-4.8.2-1]", "$share//a", false},
		{"shared without filter", "$share/g", false},
		{"shared with empty filter", "$share/g/", false},
		{"shared prefix only", "$share/", false},
		{"shared name with plus [MQTT-4.8.2-2]", "$share/+/a", false},
		{"shared name with hash [MQTT-4.8.2-2]", "$share/#", false},
		{"shared name containing hash [MQTT-4.8.2-2]", "$share/g#/a", false},
		{"shared bad inner filter", "$share/g/a/#/b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidFilter(tt.in); got != tt.want {
				t.Errorf("ValidFilter(%q) = %v, want %v", trunc(tt.in), got, tt.want)
			}
		})
	}
}

func TestIsShared(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"$share/g/a", true},
		{"$share/g/#", true},
		{"$share", false},
		{"$shared/g/a", false},
		{"$SHARE/g/a", false}, // topics are case-sensitive [MQTT-4.7.3-4]
		{"a/$share/g", false},
		{"$SYS/x", false},
	}
	for _, tt := range tests {
		if got := IsShared(tt.in); got != tt.want {
			t.Errorf("IsShared(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// matchCases are shared by the Match and Index tests. Most come from the
// examples in MQTT 3.1.1 / 5.0 section 4.7.
var matchCases = []struct {
	filter, name string
	want         bool
}{
	// Multi-level wildcard [MQTT-4.7.1-2], spec examples.
	{"sport/tennis/player1/#", "sport/tennis/player1", true},
	{"sport/tennis/player1/#", "sport/tennis/player1/ranking", true},
	{"sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true},
	{"sport/tennis/player1/#", "sport/tennis/player2", false},
	{"sport/tennis/player1/#", "sport/tennis", false},
	{"sport/#", "sport", true},
	{"sport/#", "sport/", true},
	{"sport/#", "sports", false},
	{"#", "sport/tennis", true},
	{"#", "/", true},
	{"#", "a", true},

	// Single-level wildcard [MQTT-4.7.1-3], spec examples.
	{"sport/tennis/+", "sport/tennis/player1", true},
	{"sport/tennis/+", "sport/tennis/player2", true},
	{"sport/tennis/+", "sport/tennis/player1/ranking", false},
	{"sport/+", "sport", false},
	{"sport/+", "sport/", true},
	{"+/+", "/finance", true},
	{"/+", "/finance", true},
	{"+", "/finance", false},
	{"+", "finance", true},
	{"+/tennis/#", "sport/tennis/player1", true},
	{"+/tennis/#", "sport/tennis", true},
	{"+/tennis/#", "sport/golf", false},

	// '$' topics [MQTT-4.7.2-1].
	{"#", "$SYS/monitor/Clients", false},
	{"+/monitor/Clients", "$SYS/monitor/Clients", false},
	{"$SYS/#", "$SYS/monitor/Clients", true},
	{"$SYS/monitor/+", "$SYS/monitor/Clients", true},
	{"$SYS/#", "$SYS", true},
	{"+", "$SYS", false},
	{"a/+", "a/$b", true}, // only the first level is special
	{"a/#", "a/$b", true},

	// Empty levels are levels.
	{"a//b", "a//b", true},
	{"a/+/b", "a//b", true},
	{"a/b", "a//b", false},
	{"a/+", "a//b", false},
	{"a/#", "a//b", true},
	{"/", "/", true},
	{"+/+", "/", true},
	{"+", "/", false},
	{"/#", "/", true},
	{"/#", "a", false},

	// Literal and case-sensitive [MQTT-4.7.3-4].
	{"sport/tennis", "sport/tennis", true},
	{"sport/tennis", "Sport/tennis", false},
	{"sport/tennis", "sport/tennis/", false},
	{"sport/tennis/", "sport/tennis", false},
	{"sport", "sport/tennis", false},
	{"sport/tennis", "sport", false},
	{"a", "b", false},
}

func TestMatch(t *testing.T) {
	for _, tt := range matchCases {
		if got := Match(tt.filter, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.filter, tt.name, got, tt.want)
		}
		if ref := refMatch(tt.filter, tt.name); ref != tt.want {
			t.Errorf("refMatch(%q, %q) = %v, want %v (test bug)", tt.filter, tt.name, ref, tt.want)
		}
	}
}

func TestMatchEmpty(t *testing.T) {
	if Match("", "a") || Match("#", "") || Match("", "") {
		t.Error("empty filter or name matched")
	}
}

func TestMatchNoAlloc(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		Match("sport/+/player1/#", "sport/tennis/player1/score/wimbledon")
	})
	if allocs != 0 {
		t.Errorf("Match allocates %v times per call", allocs)
	}
}

// refMatch is an independent, straightforward implementation of the matching
// rules using strings.Split, used to cross-check Match.
func refMatch(filter, name string) bool {
	if filter == "" || name == "" {
		return false
	}
	f := strings.Split(filter, "/")
	n := strings.Split(name, "/")
	if strings.HasPrefix(name, "$") && (f[0] == "+" || f[0] == "#") {
		return false
	}
	for i, fl := range f {
		if fl == "#" {
			return true
		}
		if i >= len(n) {
			return false
		}
		if fl != "+" && fl != n[i] {
			return false
		}
	}
	return len(f) == len(n)
}

// FuzzMatch compares Match against refMatch for valid inputs.
func FuzzMatch(f *testing.F) {
	for _, tt := range matchCases {
		f.Add(tt.filter, tt.name)
	}
	f.Fuzz(func(t *testing.T, filter, name string) {
		got := Match(filter, name)
		if !ValidFilter(filter) || IsShared(filter) || !ValidName(name) {
			return // only valid input has a defined answer
		}
		if want := refMatch(filter, name); got != want {
			t.Errorf("Match(%q, %q) = %v, refMatch = %v", filter, name, got, want)
		}
	})
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:20] + "..." + s[len(s)-20:]
	}
	return s
}
