// Package topic implements MQTT topic names, topic filters and a
// subscription index (a trie keyed by topic level) that maps a published
// topic name to the subscribers whose filters match it.
//
// The rules follow MQTT 3.1.1 section 4.7 and MQTT 5.0 section 4.7; both
// versions agree on topic syntax and matching. Rule ids such as
// [MQTT-4.7.1-1] refer to the normative statements of the specification.
package topic

import (
	"strings"
	"unicode/utf8"
)

// maxLen is the longest topic name or filter in bytes: every MQTT string is
// prefixed by a two-byte length. (§1.5.4)
const maxLen = 65535

// sharePrefix starts a shared subscription filter ($share/{ShareName}/{filter}).
// It is an MQTT 5.0 feature; in 3.1.1 such filters are ordinary filters.
const sharePrefix = "$share/"

// validString checks the rules every MQTT UTF-8 string must obey: well-formed
// UTF-8 [MQTT-1.5.4-1] (which also excludes the surrogates U+D800..U+DFFF),
// no U+0000 [MQTT-1.5.4-2], and a length that fits the two-byte prefix. A
// topic name or filter must also be at least one character [MQTT-4.7.3-1].
func validString(s string) bool {
	if len(s) == 0 || len(s) > maxLen {
		return false
	}
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// ValidName reports whether s is a valid topic name for PUBLISH: non-empty,
// no '+' or '#', valid UTF-8 without U+0000, at most 65535 bytes.
// [MQTT-3.3.2-2] [MQTT-4.7.1-1] [MQTT-4.7.3-1] [MQTT-4.7.3-2] [MQTT-4.7.3-3]
// [MQTT-1.5.4-1] [MQTT-1.5.4-2]
//
// Wildcards are rejected because a name is matched against filters, never
// the other way round: a name "a/+" would be indistinguishable from the
// pattern. Names that start with '$' (such as "$SYS/x") are syntactically
// valid; whether a client may publish to them is the broker's policy.
func ValidName(s string) bool {
	if !validString(s) {
		return false
	}
	return strings.IndexByte(s, '+') < 0 && strings.IndexByte(s, '#') < 0
}

// ValidFilter reports whether s is a valid topic filter: non-empty, '#' only
// as the last level and alone in its level, '+' alone in its level, valid
// UTF-8 without U+0000, at most 65535 bytes.
// [MQTT-4.7.1-1] [MQTT-4.7.1-2] [MQTT-4.7.1-3] [MQTT-4.7.3-1] [MQTT-4.7.3-2]
// [MQTT-4.7.3-3] [MQTT-1.5.4-1] [MQTT-1.5.4-2]
//
// A shared subscription filter "$share/{ShareName}/{filter}" is additionally
// checked the way MQTT 5.0 requires: ShareName must be at least one character
// without '/', '+' or '#', and must be followed by '/' and a valid filter
// [MQTT-4.8.2-1] [MQTT-4.8.2-2]. Without this check "$share/+/x" would be
// accepted as an ordinary filter and the broker would create a share group
// named "+".
func ValidFilter(s string) bool {
	if !validString(s) {
		return false
	}
	if IsShared(s) {
		rest := s[len(sharePrefix):]
		i := strings.IndexByte(rest, '/')
		if i <= 0 { // empty share name, or no filter after it
			return false
		}
		if strings.ContainsAny(rest[:i], "+#") {
			return false
		}
		s = rest[i+1:]
		if s == "" {
			return false
		}
	}
	return validFilterLevels(s)
}

// validFilterLevels checks the wildcard placement of a non-empty filter
// without splitting it into a slice.
func validFilterLevels(s string) bool {
	for {
		i := strings.IndexByte(s, '/')
		level := s
		if i >= 0 {
			level = s[:i]
		}
		switch {
		case level == "#":
			// '#' must be the last level. [MQTT-4.7.1-2]
			if i >= 0 {
				return false
			}
		case level == "+":
			// '+' alone in its level is fine anywhere. [MQTT-4.7.1-3]
		case strings.ContainsAny(level, "+#"):
			// A wildcard sharing a level with other characters, as in
			// "sport/tennis#" or "sport/+player". [MQTT-4.7.1-2] [MQTT-4.7.1-3]
			return false
		}
		if i < 0 {
			return true
		}
		s = s[i+1:]
	}
}

// IsShared reports whether a filter is a shared subscription ($share/...).
//
// Shared filters do not match topic names directly: the broker must strip
// "$share/{ShareName}/" and match the remainder, delivering to one member of
// the group. Neither Match nor Index does that stripping, so callers use
// IsShared to decide which path a subscription takes.
func IsShared(s string) bool {
	return strings.HasPrefix(s, sharePrefix)
}

// Match reports whether topic name matches filter. Both are assumed valid
// (see ValidName and ValidFilter); invalid input gives an unspecified result
// but never panics.
//
//   - '#' matches any number of levels including zero, so "a/#" matches the
//     parent "a" as well as "a/b/c". [MQTT-4.7.1-2]
//   - '+' matches exactly one level, which may be empty. [MQTT-4.7.1-3]
//   - A filter starting with a wildcard does not match a name starting with
//     '$', so "#" does not deliver "$SYS/..." traffic to everybody. [MQTT-4.7.2-1]
//   - Empty levels are levels: "a//b" has three levels and "/finance" has
//     two (an empty one, then "finance"), so "+/+" matches "/finance".
//   - Matching is case-sensitive and byte-exact; no normalisation. [MQTT-4.7.3-4]
//
// Match walks both strings level by level with strings.IndexByte and does not
// allocate.
func Match(filter, name string) bool {
	if filter == "" || name == "" {
		return false
	}
	if name[0] == '$' && (filter[0] == '+' || filter[0] == '#') {
		return false
	}
	for {
		var fl string
		fLast := false
		if i := strings.IndexByte(filter, '/'); i >= 0 {
			fl, filter = filter[:i], filter[i+1:]
		} else {
			fl, filter, fLast = filter, "", true
		}
		if fl == "#" {
			return true
		}

		var nl string
		nLast := false
		if i := strings.IndexByte(name, '/'); i >= 0 {
			nl, name = name[:i], name[i+1:]
		} else {
			nl, name, nLast = name, "", true
		}
		if fl != "+" && fl != nl {
			return false
		}

		switch {
		case fLast && nLast:
			return true
		case fLast:
			// The name has more levels than the filter.
			return false
		case nLast:
			// The name is exhausted; only a trailing "#" (which matches the
			// parent level) can still match. [MQTT-4.7.1-2]
			return filter == "#"
		}
	}
}
