package auth

import "strings"

// Overlap reports whether some topic name matches both filter a and filter b: whether a
// subscription to a can ever deliver a message that a rule on b is about. Both must be valid
// filters. The matching rules are MQTT's: '+' is one level, possibly empty [MQTT-4.7.1-3]; '#' is
// any number of levels, zero included, so "a/#" matches "a" [MQTT-4.7.1-2]; a filter that starts
// with a wildcard matches no topic that starts with '$' [MQTT-4.7.2-1].
func Overlap(a, b string) bool {
	al, bl := strings.Split(a, "/"), strings.Split(b, "/")
	if dollarExcluded(al[0], bl[0]) || dollarExcluded(bl[0], al[0]) {
		return false
	}
	for i := 0; ; i++ {
		switch {
		case i == len(al) && i == len(bl):
			return true
		case i == len(al):
			return bl[i] == "#" // "a" and "a/#" share the topic "a"
		case i == len(bl):
			return al[i] == "#"
		case al[i] == "#" || bl[i] == "#":
			return true
		case al[i] == "+" || bl[i] == "+" || al[i] == bl[i]:
			continue
		default:
			return false
		}
	}
}

// Covers reports whether every topic name that matches filter inner also matches filter outer: a
// deny rule on outer refuses all that a subscription to inner could deliver.
func Covers(outer, inner string) bool {
	ol, il := strings.Split(outer, "/"), strings.Split(inner, "/")
	if isWildcard(ol[0]) && !isWildcard(il[0]) && strings.HasPrefix(il[0], "$") {
		return false // outer matches no '$' topic, and inner matches only such topics
	}
	for i := 0; ; i++ {
		switch {
		case i == len(ol):
			return i == len(il)
		case ol[i] == "#":
			return true
		case i == len(il):
			return false // inner ends; outer still wants a level that is not "#"
		case il[i] == "#":
			return false // inner reaches deeper than outer does
		case ol[i] == "+":
			continue // any one level, "+" included
		case il[i] == "+" || ol[i] != il[i]:
			return false
		}
	}
}

// dollarExcluded reports whether a first level that is a wildcard faces a literal first level
// starting with '$', which it cannot match [MQTT-4.7.2-1].
func dollarExcluded(first, other string) bool {
	return isWildcard(first) && !isWildcard(other) && strings.HasPrefix(other, "$")
}

func isWildcard(level string) bool { return level == "+" || level == "#" }
