package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

func TestBatchEncodeDecode(t *testing.T) {
	b := newBatch(7, 42, 3)
	kind, got, err := decodeBatch(b.encode(cmdBatch))
	if err != nil {
		t.Fatal(err)
	}
	if kind != cmdBatch || got.ID != b.ID || got.Owner != b.Owner || got.Epoch != b.Epoch {
		t.Fatalf("decoded %d %+v, want %d %+v", kind, got, cmdBatch, b)
	}
	if len(got.Records) != 2+subscribersPerMessage {
		t.Fatalf("%d records, want %d", len(got.Records), 2+subscribersPerMessage)
	}
	for i, r := range got.Records {
		w := b.Records[i]
		if r.Bucket != w.Bucket || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) {
			t.Fatalf("record %d: %+v, want %+v", i, r, w)
		}
	}
	if _, _, err := decodeBatch(b.encode(cmdBatch)[:30]); err == nil {
		t.Fatal("a truncated entry decoded without error")
	}
}

// apply runs entries through the state machine as hashicorp/raft would, and returns its answers.
func apply(t *testing.T, s *stateMachine, entries ...[]byte) []interface{} {
	t.Helper()
	var logs []*raft.Log
	for i, e := range entries {
		logs = append(logs, &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: e})
	}
	return s.ApplyBatch(logs)
}

// A write from an owner whose epoch was superseded is refused by the state machine, in log
// order, while the current owner's write is applied.
func TestStateMachineFencesOldEpoch(t *testing.T) {
	s, err := openStateMachine(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.db.Close()
	old, current := newBatch(1, 1, 1), newBatch(1, 2, 2)
	got := apply(t, s,
		(&Batch{Owner: old.Owner, Epoch: 1}).encode(cmdClaim),
		(&Batch{Owner: old.Owner, Epoch: 2}).encode(cmdClaim),
		old.encode(cmdBatch),
		current.encode(cmdBatch),
		(&Batch{Owner: old.Owner, Epoch: 2}).encode(cmdClaim),
	)
	want := []string{"", "", errFenced.Error(), "", errFenced.Error()}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entry %d answered %q, want %q", i, got[i], want[i])
		}
	}
	ids, err := s.messageIDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != current.ID {
		t.Fatalf("messages present %v, want only %d", ids, current.ID)
	}
}

// Applying the same batch twice (a writer's retry after an unclear failure) leaves the state as
// applying it once.
func TestStateMachineApplyIsIdempotent(t *testing.T) {
	s, err := openStateMachine(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.db.Close()
	b := newBatch(3, 9, 1)
	apply(t, s, (&Batch{Owner: b.Owner, Epoch: 1}).encode(cmdClaim), b.encode(cmdBatch))
	once := dump(t, s.db)
	if got := apply(t, s, b.encode(cmdBatch)); got[0] != "" {
		t.Fatalf("second apply answered %q", got[0])
	}
	if twice := dump(t, s.db); twice != once {
		t.Fatalf("state after a replay differs:\n%s\nwant\n%s", twice, once)
	}
}

func dump(t *testing.T, db *bolt.DB) string {
	t.Helper()
	var buf bytes.Buffer
	err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				buf.WriteString(string(name) + " " + string(k) + " " + string(v) + "\n")
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(errors.Join(errors.New("dump"), err))
	}
	return buf.String()
}

// The failover check reports an acknowledged batch that was not read back as missing.
func TestCompareReadBackFindsLoss(t *testing.T) {
	acks := []ack{{id: 1}, {id: 2}, {id: 3}}
	acked, present, missing, unacked := compareReadBack(acks, []uint64{1, 3, 4})
	if acked != 3 || present != 3 || missing != 1 || unacked != 1 {
		t.Fatalf("acked %d present %d missing %d unacked %d, want 3 3 1 1", acked, present, missing, unacked)
	}
}
