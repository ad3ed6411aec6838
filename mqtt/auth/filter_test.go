package auth

import (
	"testing"

	"github.com/oncemq/oncemq/session/topic"
)

// Overlap and Covers, table-tested, and checked against topic.Match on sample topic names: if a name
// matches both filters they must overlap; if a name matches inner but not outer, outer cannot cover
// inner.
func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"#", "a/b/c", true},
		{"a/#", "a", true}, // [MQTT-4.7.1-2] the parent level
		{"a/#", "b", false},
		{"a/+", "a", false}, // '+' is exactly one level
		{"a/+", "a/", true}, // an empty level [MQTT-4.7.1-3]
		{"+/+", "/finance", true},
		{"a/+/c", "a/b/+", true},
		{"a/+/c", "a/b/d", false},
		{"a/b", "a/b/c", false},
		{"a/b/#", "a/+/c/d", true},
		{"#", "$SYS/x", false}, // [MQTT-4.7.2-1]
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"$SYS/#", "#", false},
		{"+", "+", true},
		{"#", "#", true},
		{"devices/alice/#", "devices/+/temp", true},
		{"devices/alice/#", "devices/bob/temp", false},
		{"a//b", "a/+/b", true},
	} {
		if got := Overlap(tc.a, tc.b); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
		if got := Overlap(tc.b, tc.a); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %t, want %t (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		outer, inner string
		want         bool
	}{
		{"#", "a/b", true},
		{"#", "$SYS/x", false},
		{"#", "#", true},
		{"a/#", "a", true},
		{"a/#", "a/b/#", true},
		{"a/b/#", "a/#", false},
		{"a/+", "a/b", true},
		{"a/+", "a/+", true},
		{"a/b", "a/+", false},
		{"a/+", "a/#", false},
		{"a/+", "a/b/c", false},
		{"a/b", "a/b", true},
		{"a/b", "a", false},
		{"+/#", "x", true},
		{"$SYS/#", "$SYS/a/+", true},
	} {
		if got := Covers(tc.outer, tc.inner); got != tc.want {
			t.Errorf("Covers(%q, %q) = %t, want %t", tc.outer, tc.inner, got, tc.want)
		}
	}
}

// Every name that matches two filters proves they overlap; a name matching inner and not outer
// proves outer does not cover inner. Checked over all pairs of a set of filters and names.
func TestOverlapAndCoversAgreeWithMatch(t *testing.T) {
	filters := []string{"#", "+", "a", "a/#", "a/+", "+/b", "a/b", "a/b/#", "+/+", "a/+/c", "$SYS/#", "$SYS/+", "/#", "+/#", "a//b"}
	names := []string{"a", "b", "a/b", "a/c", "x/b", "a/b/c", "a/x/c", "$SYS", "$SYS/x", "/", "/x", "a/", "a//b", "c/d/e"}
	for _, f := range filters {
		for _, g := range filters {
			for _, n := range names {
				mf, mg := topic.Match(f, n), topic.Match(g, n)
				if mf && mg && !Overlap(f, g) {
					t.Errorf("%q matches %q and %q, but Overlap is false", n, f, g)
				}
				if mg && !mf && Covers(f, g) {
					t.Errorf("%q matches %q and not %q, but Covers(%q, %q) is true", n, g, f, f, g)
				}
			}
		}
	}
}
