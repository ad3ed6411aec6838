package topic

import "strings"

// Index maps filters to the set of subscribers (keys are client ids) with a
// value V per (filter, client), and finds the subscribers of a topic name.
//
// It is a trie keyed by topic level. Each node holds a map of literal
// children, a single '+' child and a single '#' child, so Match only visits
// the nodes that can match the name: with 50,000 clients each on
// "devices/<id>/cmd", matching "devices/42/cmd" looks up "42" in one map and
// never iterates the other 49,999 branches. Nodes are created on Add and
// pruned on Remove, so memory follows the live subscriptions.
//
// Filters are stored literally and are assumed to be valid (see ValidFilter).
// A shared filter "$share/g/a/b" is indexed as the literal levels "$share",
// "g", "a", "b"; a broker should strip the share prefix and keep its own
// group bookkeeping (see IsShared).
//
// An Index is not safe for concurrent use: the caller must hold a lock
// around every method, including Match, and fn must not modify the Index.
// Leaving the locking to the caller lets it guard the index together with
// the session state it must stay consistent with, under one lock.
//
// The zero Index is not ready for use; call NewIndex.
type Index[V any] struct {
	root node[V]
	n    int
}

// node is one topic level of a filter. The path from the root to a node
// spells a filter prefix; subs are the subscribers whose filter ends exactly
// here.
type node[V any] struct {
	children map[string]*node[V] // literal next levels; nil until needed
	plus     *node[V]            // the '+' next level
	hash     *node[V]            // the '#' next level; it has subs and no children
	subs     map[string]V        // client id -> value; nil until needed
	// filter is the full filter string of subs, kept so Match can report it
	// without rebuilding it from levels. Only meaningful while subs is
	// non-empty.
	filter string
}

// empty reports whether the node can be pruned.
func (n *node[V]) empty() bool {
	return len(n.subs) == 0 && len(n.children) == 0 && n.plus == nil && n.hash == nil
}

// NewIndex returns an empty Index.
func NewIndex[V any]() *Index[V] {
	return &Index[V]{}
}

// Len is the number of (filter, client) pairs.
func (ix *Index[V]) Len() int { return ix.n }

// nextLevel splits the first level off s. last reports that level is the
// final level (there was no '/').
func nextLevel(s string) (level, rest string, last bool) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:], false
	}
	return s, "", true
}

// Add sets the value for (filter, clientID) and reports whether it replaced
// an existing one. Replacing is how a SUBSCRIBE for an existing filter
// updates its options without a second delivery path. [MQTT-3.8.4-3]
func (ix *Index[V]) Add(filter, clientID string, v V) (replaced bool) {
	n := &ix.root
	rest := filter
	for {
		level, r, last := nextLevel(rest)
		rest = r
		var next *node[V]
		switch level {
		case "+":
			if n.plus == nil {
				n.plus = &node[V]{}
			}
			next = n.plus
		case "#":
			if n.hash == nil {
				n.hash = &node[V]{}
			}
			next = n.hash
		default:
			next = n.children[level]
			if next == nil {
				if n.children == nil {
					n.children = make(map[string]*node[V])
				}
				next = &node[V]{}
				n.children[level] = next
			}
		}
		n = next
		if last {
			break
		}
	}
	if n.subs == nil {
		n.subs = make(map[string]V)
		n.filter = filter
	}
	_, replaced = n.subs[clientID]
	n.subs[clientID] = v
	if !replaced {
		ix.n++
	}
	return replaced
}

// Remove deletes (filter, clientID) and reports whether it existed. Nodes
// left without subscribers or children are pruned, so a churn of distinct
// filters (such as per-device topics) does not leak trie nodes.
func (ix *Index[V]) Remove(filter, clientID string) bool {
	if !ix.root.remove(filter, clientID) {
		return false
	}
	ix.n--
	return true
}

// remove deletes clientID from the filter rooted at n (filter is relative to
// n) and prunes the child it descended into when that child became empty.
// The recursion depth is the number of levels in the filter.
func (n *node[V]) remove(filter, clientID string) bool {
	level, rest, last := nextLevel(filter)
	var child *node[V]
	switch level {
	case "+":
		child = n.plus
	case "#":
		child = n.hash
	default:
		child = n.children[level]
	}
	if child == nil {
		return false
	}
	if last {
		if _, ok := child.subs[clientID]; !ok {
			return false
		}
		delete(child.subs, clientID)
		if len(child.subs) == 0 {
			// Drop the map so an idle node holds no memory for it.
			child.subs = nil
			child.filter = ""
		}
	} else if !child.remove(rest, clientID) {
		return false
	}
	if child.empty() {
		switch level {
		case "+":
			n.plus = nil
		case "#":
			n.hash = nil
		default:
			delete(n.children, level)
			if len(n.children) == 0 {
				n.children = nil
			}
		}
	}
	return true
}

// Match calls fn for every (clientID, filter, value) whose filter matches the
// topic name, by the rules of the package-level Match. A client subscribed
// with several matching filters is reported once per filter; the caller
// merges them, because only it knows the subscription options (for
// overlapping subscriptions MQTT delivers once at the highest QoS, and MQTT
// 5.0 subscription identifiers must all be sent).
//
// The order of calls is unspecified. Match walks the name's levels with
// strings.IndexByte and does not allocate.
func (ix *Index[V]) Match(name string, fn func(clientID, filter string, v V)) {
	if name == "" {
		return
	}
	// Wildcards at the first level do not match names starting with '$'.
	// [MQTT-4.7.2-1]
	ix.root.match(name, false, name[0] == '$', fn)
}

// match reports the subscribers under n for the remaining levels of the name.
// done means every level of the name has been consumed. noWild suppresses
// n's wildcard children; it is set only at the root for '$' names.
func (n *node[V]) match(rest string, done, noWild bool, fn func(clientID, filter string, v V)) {
	// '#' matches all remaining levels, including none: "a/#" matches "a".
	// [MQTT-4.7.1-2]
	if n.hash != nil && !noWild {
		n.hash.report(fn)
	}
	if done {
		n.report(fn)
		return
	}
	level, next, last := nextLevel(rest)
	if c := n.children[level]; c != nil {
		c.match(next, last, false, fn)
	}
	// '+' matches exactly one level, which may be empty. [MQTT-4.7.1-3]
	if n.plus != nil && !noWild {
		n.plus.match(next, last, false, fn)
	}
}

func (n *node[V]) report(fn func(clientID, filter string, v V)) {
	for id, v := range n.subs {
		fn(id, n.filter, v)
	}
}

// nodes counts the trie nodes below the root; used by tests to check pruning.
func (ix *Index[V]) nodes() int {
	return ix.root.count()
}

func (n *node[V]) count() int {
	c := 0
	for _, ch := range n.children {
		c += 1 + ch.count()
	}
	if n.plus != nil {
		c += 1 + n.plus.count()
	}
	if n.hash != nil {
		c += 1 + n.hash.count()
	}
	return c
}
