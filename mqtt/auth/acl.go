package auth

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/oncemq/oncemq/session/topic"
)

// access is what a rule grants: read, write, both, or deny (neither, and it wins over any grant).
type access uint8

const (
	accessRead  access = 1
	accessWrite access = 2
	accessDeny  access = 4
)

// rule is one topic or pattern line.
type rule struct {
	access access
	filter string // a pattern's may hold %u and %c
}

// ACL is an acl_file in mosquitto's syntax:
//
//	# comment
//	topic [read|write|readwrite|deny] FILTER     before any user line: anonymous clients
//	user NAME                                    the topic lines after it are NAME's
//	topic [read|write|readwrite|deny] FILTER
//	pattern [read|write|readwrite|deny] FILTER   everyone; %u is the username, %c the client id
//
// The access defaults to readwrite. What no rule grants is refused; a deny rule that matches
// refuses whatever else grants, wherever it stands in the file. A pattern whose %u or %c would
// be replaced by a value holding a wildcard (+ or #), or %u for an anonymous client, applies to
// no one.
type ACL struct {
	anonymous []rule
	users     map[string][]rule
	patterns  []rule
}

// LoadACL reads the ACL file at path. An unknown keyword, a bad access or an invalid filter is an
// error naming the file and the line.
func LoadACL(path string) (*ACL, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acl file: %w", err)
	}
	defer f.Close()
	return ParseACL(f, path)
}

// ParseACL reads an ACL from r; name is the file's name for errors.
func ParseACL(r io.Reader, name string) (*ACL, error) {
	a := &ACL{users: make(map[string][]rule)}
	sc := bufio.NewScanner(r)
	var user *string // nil before the first user line
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keyword, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch keyword {
		case "user":
			if rest == "" {
				return nil, fmt.Errorf("%s:%d: user without a name", name, n)
			}
			user = &rest
			if _, ok := a.users[rest]; !ok {
				a.users[rest] = nil
			}
		case "topic", "pattern":
			r, err := parseRule(rest)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %w", name, n, keyword, err)
			}
			switch {
			case keyword == "pattern":
				a.patterns = append(a.patterns, r)
			case user == nil:
				a.anonymous = append(a.anonymous, r)
			default:
				a.users[*user] = append(a.users[*user], r)
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown keyword %q (want user, topic or pattern)", name, n, keyword)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return a, nil
}

// parseRule parses "[ACCESS] FILTER"; the filter is the rest of the line and may hold spaces.
func parseRule(s string) (rule, error) {
	r := rule{access: accessRead | accessWrite, filter: s}
	word, rest, _ := strings.Cut(s, " ")
	a, known := map[string]access{"read": accessRead, "write": accessWrite,
		"readwrite": accessRead | accessWrite, "deny": accessDeny}[word]
	if known { // an access word alone is a line missing its filter, as mosquitto reads it
		r.access, r.filter = a, strings.TrimSpace(rest)
	}
	if r.filter == "" {
		return r, fmt.Errorf("no topic filter")
	}
	if !topic.ValidFilter(r.filter) {
		return r, fmt.Errorf("invalid topic filter %q", r.filter)
	}
	return r, nil
}

// rules calls fn with every rule that applies to the client, patterns expanded; it stops when fn
// returns false. username "" is an anonymous client.
func (a *ACL) rules(username, clientID string, fn func(r rule) bool) {
	own := a.anonymous
	if username != "" {
		own = a.users[username]
	}
	for _, r := range own {
		if !fn(r) {
			return
		}
	}
	for _, p := range a.patterns {
		f, ok := expand(p.filter, username, clientID)
		if ok && !fn(rule{access: p.access, filter: f}) {
			return
		}
	}
}

// expand replaces %u and %c in a pattern's filter; false when the pattern applies to no one here.
func expand(filter, username, clientID string) (string, bool) {
	if strings.Contains(filter, "%u") {
		if username == "" || strings.ContainsAny(username, "+#") {
			return "", false
		}
		filter = strings.ReplaceAll(filter, "%u", username)
	}
	if strings.Contains(filter, "%c") {
		if strings.ContainsAny(clientID, "+#") {
			return "", false
		}
		filter = strings.ReplaceAll(filter, "%c", clientID)
	}
	return filter, true
}

// allowed reports whether the client may do want (read or write) on the topic name.
func (a *ACL) allowed(username, clientID, name string, want access) bool {
	granted, denied := false, false
	a.rules(username, clientID, func(r rule) bool {
		if topic.Match(r.filter, name) {
			denied = r.access&accessDeny != 0
			granted = granted || r.access&want != 0
		}
		return !denied
	})
	return granted && !denied
}

// CanPublish reports whether the client may publish to the topic name.
func (a *ACL) CanPublish(username, clientID, name string) bool {
	return a.allowed(username, clientID, name, accessWrite)
}

// CanRead reports whether the client may receive a message published to the topic name.
func (a *ACL) CanRead(username, clientID, name string) bool {
	return a.allowed(username, clientID, name, accessRead)
}

// CanSubscribe reports whether a subscription to filter can deliver anything to the client: some
// read rule overlaps it, and no deny rule covers it. A wider filter than the client may read (such
// as #) is allowed; CanRead filters each message.
func (a *ACL) CanSubscribe(username, clientID, filter string) bool {
	overlaps, covered := false, false
	a.rules(username, clientID, func(r rule) bool {
		switch {
		case r.access&accessDeny != 0:
			covered = Covers(r.filter, filter)
		case r.access&accessRead != 0:
			overlaps = overlaps || Overlap(r.filter, filter)
		}
		return !covered
	})
	return overlaps && !covered
}
