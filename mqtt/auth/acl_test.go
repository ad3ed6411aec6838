package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testACL = `# anonymous clients: topic lines before any user line
topic read public/#

user alice
topic readwrite alice/#
topic read sensors/#
topic deny sensors/secret/#
topic write cmd/+/set

user bob
topic sensors/bob

pattern readwrite devices/%u/#
pattern write clients/%c/status
`

func parseTestACL(t *testing.T) *ACL {
	t.Helper()
	a, err := ParseACL(strings.NewReader(testACL), "acl")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestACLDecides(t *testing.T) {
	a := parseTestACL(t)
	for _, tc := range []struct {
		user, client, op, name string
		want                   bool
	}{
		{"", "anon", "read", "public/news", true},
		{"", "anon", "write", "public/news", false},
		{"", "anon", "read", "sensors/x", false},
		{"alice", "a1", "read", "public/news", false}, // the anonymous rules are not alice's
		{"alice", "a1", "write", "alice/x/y", true},
		{"alice", "a1", "read", "sensors/hall", true},
		{"alice", "a1", "write", "sensors/hall", false},
		{"alice", "a1", "read", "sensors/secret/key", false}, // deny wins over the wider read
		{"alice", "a1", "write", "cmd/lamp/set", true},
		{"alice", "a1", "read", "cmd/lamp/set", false},
		{"bob", "b1", "read", "sensors/bob", true}, // no access word: readwrite
		{"bob", "b1", "write", "sensors/bob", true},
		{"bob", "b1", "read", "sensors/hall", false},
		{"bob", "b1", "write", "devices/bob/t", true}, // %u
		{"bob", "b1", "write", "devices/alice/t", false},
		{"", "anon", "write", "devices//t", false},        // %u never applies to anonymous clients
		{"bob", "b1", "write", "clients/b1/status", true}, // %c
		{"bob", "b1", "write", "clients/b2/status", false},
		{"ev+l", "x", "write", "devices/ev+l/t", false}, // a wildcard in the name disables the pattern
		{"carol", "c#", "write", "clients/c#/status", false},
		{"carol", "c1", "read", "anything", false}, // no rule: refused
	} {
		var got bool
		if tc.op == "read" {
			got = a.CanRead(tc.user, tc.client, tc.name)
		} else {
			got = a.CanPublish(tc.user, tc.client, tc.name)
		}
		if got != tc.want {
			t.Errorf("%s/%s %s %s = %t, want %t", tc.user, tc.client, tc.op, tc.name, got, tc.want)
		}
	}
}

// SUBSCRIBE: a filter no read rule can match is refused; a wider one is granted (CanRead filters
// each message); one a deny rule covers is refused.
func TestACLSubscribe(t *testing.T) {
	a := parseTestACL(t)
	for _, tc := range []struct {
		user, filter string
		want         bool
	}{
		{"alice", "#", true},
		{"alice", "sensors/+", true},
		{"alice", "sensors/secret/#", false},
		{"alice", "sensors/secret/a", false},
		{"alice", "cmd/+/set", false}, // write only
		{"alice", "other/#", false},
		{"bob", "devices/bob/#", true},
		{"bob", "devices/+/x", true},
		{"bob", "devices/alice/x", false},
		{"", "public/+", true},
		{"", "sensors/#", false},
	} {
		if got := a.CanSubscribe(tc.user, "c", tc.filter); got != tc.want {
			t.Errorf("%q subscribes %q = %t, want %t", tc.user, tc.filter, got, tc.want)
		}
	}
}

// A bad line stops the load with the file and the line.
func TestACLRefusesBadLinesWithFileAndLine(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"user a\ntopic read a/#/b\n", ":2: topic: invalid topic filter \"a/#/b\""},
		{"# ok\ntopc read x\n", ":2: unknown keyword \"topc\""},
		{"user\n", ":1: user without a name"},
		{"pattern write\n", ":1: pattern: no topic filter"},
		{"topic deny \n", ":1: topic: no topic filter"},
	} {
		path := filepath.Join(t.TempDir(), "acl")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadACL(path)
		if err == nil || !strings.Contains(err.Error(), path+tc.want) {
			t.Errorf("file %q: error %v, want it to contain %q", tc.file, err, path+tc.want)
		}
	}
}
