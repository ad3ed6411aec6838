package inflight

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestReplayInKeyOrderGivesTheLoggedState checks that start-up's replay, which applies a log's
// changes sorted by the record they write (replayInKeyOrder), leaves the file exactly as applying
// them in the order they were logged does (replayLog), and that replaying the same records again
// changes nothing: random logs of changes over a few keys of every bucket, DeleteSession's range
// deletes among them, on two files holding the same records before.
func TestReplayInKeyOrderGivesTheLoggedState(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	reordered := 0
	for round := range 300 {
		before := randomBatches(rng, 3, 4)
		var records []logRecord
		for i := range 1 + rng.IntN(4) {
			rec := logRecord{index: uint64(i + 1)}
			for _, b := range randomBatches(rng, 1+rng.IntN(4), 1+rng.IntN(8)) {
				rec.batches = append(rec.batches, b.ops)
			}
			records = append(records, rec)
		}
		logged := openBuckets(t, filepath.Join(t.TempDir(), fmt.Sprintf("logged%d.db", round)))
		sorted := openBuckets(t, filepath.Join(t.TempDir(), fmt.Sprintf("sorted%d.db", round)))
		for _, db := range []*bolt.DB{logged, sorted} {
			applyBatches(t, db, before, nil)
		}
		replay(t, logged, replayLog, records)
		replay(t, sorted, replayInKeyOrder, records)
		want, got := dumpBuckets(t, logged), dumpBuckets(t, sorted)
		if got != want {
			t.Fatalf("round %d: replay in key order changed the result\nin log order:\n%s\nin key order:\n%s", round, want, got)
		}
		replay(t, sorted, replayInKeyOrder, records)
		if again := dumpBuckets(t, sorted); again != want {
			t.Fatalf("round %d: a second replay changed the result\nonce:\n%s\ntwice:\n%s", round, want, again)
		}
		if !inKeyOrder(records) {
			reordered++
		}
	}
	if reordered == 0 {
		t.Fatal("no log was ever out of key order: the test checks nothing")
	}
}

func replay(t *testing.T, db *bolt.DB, fn func(*bolt.Tx, []logRecord) error, records []logRecord) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error { return fn(tx, records) }); err != nil {
		t.Fatal(err)
	}
}

// inKeyOrder reports whether the point changes of records already come in key order.
func inKeyOrder(records []logRecord) bool {
	var prev []byte
	for _, r := range records {
		for _, ops := range r.batches {
			for k := range ops {
				key, ok := ops[k].appendTarget(nil)
				if ok && prev != nil && string(key) < string(prev) {
					return false
				}
				prev = key
			}
		}
	}
	return true
}
