package inflight

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCheckpointSkipsSupersededChanges checks that a checkpoint which skips the changes a later change
// overwrites or deletes leaves bbolt exactly as applying every change in order does: random
// segments of changes over a few keys of every bucket, with DeleteSession's range deletes among
// them, applied both ways to two files holding the same records before.
func TestCheckpointSkipsSupersededChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	skipped := 0
	for round := range 300 {
		before := randomBatches(rng, 3, 4)
		segment := randomBatches(rng, 1+rng.IntN(6), 1+rng.IntN(8))
		all := openBuckets(t, filepath.Join(t.TempDir(), fmt.Sprintf("all%d.db", round)))
		some := openBuckets(t, filepath.Join(t.TempDir(), fmt.Sprintf("some%d.db", round)))
		for _, db := range []*bolt.DB{all, some} {
			applyBatches(t, db, before, nil)
		}
		skip := superseded(segment)
		for _, s := range skip {
			if s {
				skipped++
			}
		}
		applyBatches(t, all, segment, nil)
		applyBatches(t, some, segment, skip)
		if a, s := dumpBuckets(t, all), dumpBuckets(t, some); a != s {
			t.Fatalf("round %d: skipping superseded changes changed the result\nall changes:\n%s\nskipping:\n%s\nsegment:\n%s", round, a, s, describeBatches(segment))
		}
	}
	if skipped == 0 {
		t.Fatal("no change was ever skipped: the test checks nothing")
	}
}

// TestSupersededQoS2Flow checks the case the skip is for: within one segment, a QoS 2 message's
// records are put and deleted, and none of its puts reach bbolt; the last put of a key that is
// not deleted does.
func TestSupersededQoS2Flow(t *testing.T) {
	m := &Message{Seq: 7, Topic: "a/b", QoS: 2, Payload: []byte("x")}
	var publish, pubrec, pubrel, pubcomp Batch
	publish.PutInbound("pub", 1, 0)
	publish.PutMessage(m)
	publish.PutOutbound("sub", OutboundRecord{PacketID: 9, State: PublishSent, QoS: 2, Order: 1, MsgSeq: 7})
	pubrec.PutOutbound("sub", OutboundRecord{PacketID: 9, State: PubrelSent, QoS: 2, Order: 1})
	pubrec.DeleteMessage(7)
	pubrel.DeleteInbound("pub", 1)
	pubrel.PutSession(SessionRecord{ClientID: "pub", ProtocolVersion: 5, ExpiryInterval: 60})
	pubcomp.DeleteOutbound("sub", 9)
	got := superseded([]*Batch{&publish, &pubrec, &pubrel, &pubcomp})
	want := []bool{true, true, true, true, false, false, false, false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("superseded = %v, want %v", got, want)
	}
}

func openBuckets(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func applyBatches(t *testing.T, db *bolt.DB, batches []*Batch, skip []bool) {
	t.Helper()
	err := db.Update(func(tx *bolt.Tx) error {
		bk, err := txBuckets(tx)
		if err != nil {
			return err
		}
		i := 0
		for _, b := range batches {
			for k := range b.ops {
				if skip == nil || !skip[i] {
					if err := bk.apply(&b.ops[k]); err != nil {
						return err
					}
				}
				i++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func dumpBuckets(t *testing.T, db *bolt.DB) string {
	t.Helper()
	var out bytes.Buffer
	err := db.View(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			fmt.Fprintf(&out, "[%s]\n", name)
			if err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				fmt.Fprintf(&out, "%q=%x\n", k, v)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func describeBatches(batches []*Batch) string {
	var out bytes.Buffer
	for i, b := range batches {
		for k := range b.ops {
			key, _ := b.ops[k].appendTarget(nil)
			fmt.Fprintf(&out, "batch %d kind %d target %q\n", i, b.ops[k].kind, key)
		}
	}
	return out.String()
}

// randomBatches makes n batches of up to size changes each over two clients and a few keys of
// every bucket, so that the same key is often put, put again and deleted.
func randomBatches(rng *rand.Rand, n, size int) []*Batch {
	clients := []string{"c1", "c2"}
	var batches []*Batch
	for range n {
		b := &Batch{}
		for range 1 + rng.IntN(size) {
			c := clients[rng.IntN(len(clients))]
			id := uint16(1 + rng.IntN(3))
			v := uint64(1 + rng.IntN(3))
			r := byte(rng.IntN(50))
			switch rng.IntN(18) {
			case 0:
				b.PutSession(SessionRecord{ClientID: c, ProtocolVersion: 5, ExpiryInterval: uint32(r)})
			case 1:
				b.DeleteSession(c)
			case 2:
				b.PutSubscription(c, SubscriptionRecord{Filter: fmt.Sprintf("f/%d", id), QoS: r % 3})
			case 3:
				b.DeleteSubscription(c, fmt.Sprintf("f/%d", id))
			case 4:
				b.PutInbound(c, id, r)
			case 5:
				b.DeleteInbound(c, id)
			case 6:
				b.PutOutbound(c, OutboundRecord{PacketID: id, State: PublishSent, QoS: 2, Order: uint64(r), MsgSeq: v})
			case 7:
				b.DeleteOutbound(c, id)
			case 8:
				b.PutQueued(c, QueuedRecord{Order: v, QoS: 1 + r%2, MsgSeq: uint64(r) + 1})
			case 9:
				b.DeleteQueued(c, v)
			case 10:
				b.PutMessage(&Message{Seq: v, Topic: "t", QoS: 2, Payload: []byte{r}})
			case 11:
				b.DeleteMessage(v)
			case 12:
				b.PutRetained(&Message{Seq: v, Topic: fmt.Sprintf("r/%d", id), Payload: []byte{r}})
			case 13:
				b.DeleteRetained(fmt.Sprintf("r/%d", id))
			case 14:
				b.PutDedup(DedupRecord{Key: DedupKey(1, c, fmt.Sprint(id)), At: int64(r)})
			case 15:
				b.DeleteDedup(DedupKey(1, c, fmt.Sprint(id)))
			case 16:
				b.PutShared(SharedRecord{Group: "g", Filter: "s/#", Order: v, MsgSeq: uint64(r) + 1})
			case 17:
				b.DeleteShared("g", "s/#", v)
			}
		}
		batches = append(batches, b)
	}
	return batches
}
