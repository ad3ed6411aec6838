package topic

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// hit is one reported (clientID, filter, value) triple.
type hit struct {
	client, filter string
	v              int
}

func collect(ix *Index[int], name string) []hit {
	var hs []hit
	ix.Match(name, func(c, f string, v int) { hs = append(hs, hit{c, f, v}) })
	sortHits(hs)
	return hs
}

func sortHits(hs []hit) {
	slices.SortFunc(hs, func(a, b hit) int {
		if c := strings.Compare(a.client, b.client); c != 0 {
			return c
		}
		return strings.Compare(a.filter, b.filter)
	})
}

func TestIndexAddReplaceRemove(t *testing.T) {
	ix := NewIndex[int]()
	if ix.Len() != 0 {
		t.Fatalf("new index Len = %d", ix.Len())
	}
	if ix.Add("a/b", "c1", 1) {
		t.Error("first Add reported replaced")
	}
	if ix.Add("a/+", "c1", 2) {
		t.Error("Add of a different filter for the same client reported replaced")
	}
	if ix.Add("a/b", "c2", 3) {
		t.Error("Add of the same filter for another client reported replaced")
	}
	if ix.Len() != 3 {
		t.Fatalf("Len = %d, want 3", ix.Len())
	}

	// Same (filter, client) replaces the value [MQTT-3.8.4-3].
	if !ix.Add("a/b", "c1", 10) {
		t.Error("Add of an existing pair did not report replaced")
	}
	if ix.Len() != 3 {
		t.Fatalf("Len after replace = %d, want 3", ix.Len())
	}
	want := []hit{{"c1", "a/+", 2}, {"c1", "a/b", 10}, {"c2", "a/b", 3}}
	if got := collect(ix, "a/b"); !slices.Equal(got, want) {
		t.Errorf("Match(a/b) = %v, want %v", got, want)
	}

	// Removing something absent reports false and changes nothing.
	for _, r := range []struct{ filter, client string }{
		{"a/b", "c3"}, {"a/c", "c1"}, {"a", "c1"}, {"a/b/c", "c1"}, {"a/#", "c1"}, {"+/b", "c1"}, {"x", "c1"},
	} {
		if ix.Remove(r.filter, r.client) {
			t.Errorf("Remove(%q, %q) of absent pair = true", r.filter, r.client)
		}
	}
	if ix.Len() != 3 {
		t.Fatalf("Len after absent removes = %d, want 3", ix.Len())
	}

	if !ix.Remove("a/b", "c1") {
		t.Error("Remove(a/b, c1) = false")
	}
	if ix.Remove("a/b", "c1") {
		t.Error("second Remove(a/b, c1) = true")
	}
	want = []hit{{"c1", "a/+", 2}, {"c2", "a/b", 3}}
	if got := collect(ix, "a/b"); !slices.Equal(got, want) {
		t.Errorf("Match(a/b) after remove = %v, want %v", got, want)
	}
	if !ix.Remove("a/b", "c2") || !ix.Remove("a/+", "c1") {
		t.Error("Remove of remaining pairs failed")
	}
	if ix.Len() != 0 || ix.nodes() != 0 {
		t.Errorf("after removing all: Len = %d, nodes = %d; want 0, 0", ix.Len(), ix.nodes())
	}
	if got := collect(ix, "a/b"); len(got) != 0 {
		t.Errorf("Match on empty index = %v", got)
	}
}

// TestIndexPruneKeepsSiblings checks that pruning a branch leaves nodes that
// are still needed by other filters, including prefixes of the removed one.
func TestIndexPruneKeepsSiblings(t *testing.T) {
	ix := NewIndex[int]()
	ix.Add("a", "c", 1)
	ix.Add("a/b/c", "c", 2)
	ix.Add("a/#", "c", 3)
	ix.Add("a/+/c", "c", 4)
	n := ix.nodes()

	ix.Add("a/b/c/d/e", "c", 5)
	if !ix.Remove("a/b/c/d/e", "c") {
		t.Fatal("Remove failed")
	}
	if got := ix.nodes(); got != n {
		t.Errorf("nodes after add+remove = %d, want %d", got, n)
	}
	ix.Remove("a/b/c", "c")
	want := []hit{{"c", "a/#", 3}, {"c", "a/+/c", 4}}
	if got := collect(ix, "a/b/c"); !slices.Equal(got, want) {
		t.Errorf("Match(a/b/c) = %v, want %v", got, want)
	}
	want = []hit{{"c", "a", 1}, {"c", "a/#", 3}}
	if got := collect(ix, "a"); !slices.Equal(got, want) {
		t.Errorf("Match(a) = %v, want %v", got, want)
	}
	ix.Remove("a", "c")
	ix.Remove("a/#", "c")
	ix.Remove("a/+/c", "c")
	if ix.Len() != 0 || ix.nodes() != 0 {
		t.Errorf("Len = %d, nodes = %d; want 0, 0", ix.Len(), ix.nodes())
	}
}

// TestIndexMatchCases runs the spec examples through the Index, one filter
// at a time, so each expectation is checked on the trie as well.
func TestIndexMatchCases(t *testing.T) {
	for _, tt := range matchCases {
		ix := NewIndex[int]()
		ix.Add(tt.filter, "c", 1)
		got := len(collect(ix, tt.name)) == 1
		if got != tt.want {
			t.Errorf("Index{%q}.Match(%q) matched = %v, want %v", tt.filter, tt.name, got, tt.want)
		}
	}
}

// TestIndexMatchesBruteForce is a property test: for random filters, clients
// and names, Index.Match reports exactly the (client, filter) pairs for which
// the package-level Match is true. It also interleaves removals and checks
// that removing everything prunes the trie.
func TestIndexMatchesBruteForce(t *testing.T) {
	levels := []string{"a", "b", "", "$x", "ab"}
	rng := rand.New(rand.NewPCG(1, 2))
	randName := func() string {
		n := 1 + rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = levels[rng.IntN(len(levels))]
		}
		return strings.Join(parts, "/")
	}
	var randFilter func() string
	randFilter = func() string {
		n := 1 + rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			switch r := rng.IntN(10); {
			case r < 3:
				parts[i] = "+"
			case r < 4 && i == n-1:
				parts[i] = "#"
			default:
				parts[i] = levels[rng.IntN(len(levels))]
			}
		}
		if f := strings.Join(parts, "/"); f != "" {
			return f
		}
		return randFilter() // a single empty level is the one invalid outcome
	}

	for round := range 20 {
		ix := NewIndex[int]()
		type key struct{ filter, client string }
		subs := map[key]int{}
		for i := range 300 {
			f := randFilter()
			if !ValidFilter(f) {
				t.Fatalf("generator produced invalid filter %q", f)
			}
			k := key{f, "c" + strconv.Itoa(rng.IntN(20))}
			_, existed := subs[k]
			subs[k] = i
			if replaced := ix.Add(k.filter, k.client, i); replaced != existed {
				t.Fatalf("Add(%q, %q) replaced = %v, want %v", k.filter, k.client, replaced, existed)
			}
			// Remove some at random so pruning runs against a busy trie.
			if rng.IntN(4) == 0 {
				for k := range subs { // random pick via map order is fine here
					if !ix.Remove(k.filter, k.client) {
						t.Fatalf("Remove(%q, %q) = false", k.filter, k.client)
					}
					delete(subs, k)
					break
				}
			}
		}
		if ix.Len() != len(subs) {
			t.Fatalf("round %d: Len = %d, want %d", round, ix.Len(), len(subs))
		}

		for range 200 {
			name := randName()
			var want []hit
			for k, v := range subs {
				if Match(k.filter, name) {
					want = append(want, hit{k.client, k.filter, v})
				}
			}
			sortHits(want)
			if got := collect(ix, name); !slices.Equal(got, want) {
				t.Fatalf("round %d: Match(%q):\n got %v\nwant %v", round, name, got, want)
			}
		}

		for k := range subs {
			if !ix.Remove(k.filter, k.client) {
				t.Fatalf("Remove(%q, %q) = false", k.filter, k.client)
			}
		}
		if ix.Len() != 0 || ix.nodes() != 0 {
			t.Fatalf("round %d: after removing all, Len = %d, nodes = %d", round, ix.Len(), ix.nodes())
		}
	}
}

func TestIndexMatchNoAlloc(t *testing.T) {
	ix := NewIndex[int]()
	ix.Add("a/b/c", "c1", 1)
	ix.Add("a/+/c", "c2", 2)
	ix.Add("a/#", "c3", 3)
	ix.Add("#", "c4", 4)
	n := 0
	fn := func(string, string, int) { n++ }
	allocs := testing.AllocsPerRun(100, func() { ix.Match("a/b/c", fn) })
	if allocs != 0 {
		t.Errorf("Index.Match allocates %v times per call", allocs)
	}
	if n != 4*101 { // AllocsPerRun runs once extra as warm-up
		t.Errorf("fn called %d times, want %d", n, 4*101)
	}
}

// newDeviceIndex builds the scenario the Index is sized for: one client per
// device, each on its own "devices/<n>/cmd", plus wildcard subscribers.
func newDeviceIndex(clients, wildcards int) *Index[int] {
	ix := NewIndex[int]()
	for i := range clients {
		id := "dev" + strconv.Itoa(i)
		ix.Add("devices/"+strconv.Itoa(i)+"/cmd", id, i)
	}
	filters := []string{"devices/+/cmd", "devices/#", "#", "devices/+/+"}
	for i := range wildcards {
		ix.Add(filters[i%len(filters)], "mon"+strconv.Itoa(i), i)
	}
	return ix
}

func TestIndexDevices(t *testing.T) {
	const clients, wildcards = 50000, 100
	ix := newDeviceIndex(clients, wildcards)
	if ix.Len() != clients+wildcards {
		t.Fatalf("Len = %d", ix.Len())
	}
	var got []hit
	ix.Match("devices/4242/cmd", func(c, f string, v int) { got = append(got, hit{c, f, v}) })
	if len(got) != 1+wildcards {
		t.Fatalf("Match returned %d hits, want %d", len(got), 1+wildcards)
	}
	found := false
	for _, h := range got {
		if h.client == "dev4242" {
			found = h.filter == "devices/4242/cmd" && h.v == 4242
		} else if !strings.HasPrefix(h.client, "mon") {
			t.Errorf("unexpected hit %v", h)
		}
	}
	if !found {
		t.Error("dev4242 not matched with its own filter")
	}
	for i := range clients {
		if !ix.Remove(fmt.Sprintf("devices/%d/cmd", i), "dev"+strconv.Itoa(i)) {
			t.Fatalf("Remove device %d failed", i)
		}
	}
	// Only the wildcard branches remain: "devices", its '+', '#', and the
	// "+"-children "cmd" and '+', and the root '#'.
	if got, want := ix.nodes(), 6; got != want {
		t.Errorf("nodes after removing devices = %d, want %d", got, want)
	}
}

func BenchmarkIndexMatch(b *testing.B) {
	ix := newDeviceIndex(50000, 100)
	n := 0
	fn := func(string, string, int) { n++ }
	b.ReportAllocs()
	for b.Loop() {
		ix.Match("devices/31337/cmd", fn)
	}
	if n == 0 {
		b.Fatal("no matches")
	}
}

// BenchmarkIndexMatchOne is BenchmarkIndexMatch without the wildcard
// subscribers: the cost of finding one device among 50,000.
func BenchmarkIndexMatchOne(b *testing.B) {
	ix := newDeviceIndex(50000, 0)
	n := 0
	fn := func(string, string, int) { n++ }
	b.ReportAllocs()
	for b.Loop() {
		ix.Match("devices/31337/cmd", fn)
	}
	if n == 0 {
		b.Fatal("no matches")
	}
}
