package inflight

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestSharedRecordsRoundTrip: group queue records, waiting and sent, come back from the file in
// key order with their message references counted; a deleted one does not; a message referred to
// only by a group record survives recovery (it is not an orphan).
func TestSharedRecordsRoundTrip(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	m1 := newMessage(j, "t/1", "one")
	m2 := newMessage(j, "t/2", "two")
	recs := []SharedRecord{
		{Group: "g", Filter: "t/#", Order: 1, MsgSeq: m1.Seq, Member: "alice", PacketID: 7, QoS: 2},
		{Group: "g", Filter: "t/#", Order: 2, MsgSeq: m2.Seq},
		{Group: "g", Filter: "t/#", Order: 300, MsgSeq: m1.Seq},
		{Group: "h", Filter: "t/2", Order: 1, MsgSeq: m2.Seq, Member: "bob", PacketID: 65535, QoS: 1},
	}
	var b Batch
	b.PutMessage(m1)
	b.PutMessage(m2)
	for _, r := range recs {
		b.PutShared(r)
	}
	b.PutShared(SharedRecord{Group: "gone", Filter: "t", Order: 5, MsgSeq: m2.Seq})
	mustCommit(t, j, &b)
	var d Batch
	d.DeleteShared("gone", "t", 5)
	mustCommit(t, j, &d)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, rec, _ := openTest(t, path, nil)
	if !reflect.DeepEqual(rec.Shared, recs) {
		t.Fatalf("recovered shared records\n%+v\nwant\n%+v", rec.Shared, recs)
	}
	if got := rec.Messages.Get(m1.Seq).refs.Load(); got != 2 {
		t.Errorf("message 1 has %d references, want 2", got)
	}
	if got := rec.Messages.Get(m2.Seq).refs.Load(); got != 2 {
		t.Errorf("message 2 has %d references, want 2", got)
	}
}

// TestSharedRecordMissingMessageIsDamage: a group record whose message is gone cannot come from a
// crash (batches are atomic), so start-up stops on it with the record named, and repair gives it
// up alone.
func TestSharedRecordMissingMessageIsDamage(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	m := newMessage(j, "t", "x")
	var b Batch
	b.PutMessage(m)
	b.PutShared(SharedRecord{Group: "g", Filter: "t", Order: 1, MsgSeq: m.Seq})
	b.PutShared(SharedRecord{Group: "g", Filter: "t", Order: 2, MsgSeq: m.Seq + 100})
	mustCommit(t, j, &b)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
	var de *DamageError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &de) || len(de.Records) != 1 {
		t.Fatalf("Open = %v, want ErrCorrupt with one damaged record", err)
	}
	want := fmt.Sprintf(`bucket shared key "g\x00t\x00\x00\x00\x00\x00\x00\x00\x00\x02" (message %d): refers to message %d, which is missing`, m.Seq+100, m.Seq+100)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error lacks %q:\n%v", want, err)
	}
	if _, err := Repair(path, time.Now()); err != nil {
		t.Fatalf("Repair: %v", err)
	}
	j2, rec, _ := openTest(t, path, nil)
	if len(rec.Shared) != 1 || rec.Shared[0].Order != 1 {
		t.Fatalf("recovered after repair %+v, want only order 1", rec.Shared)
	}
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSharedBatchValidation: a batch with a malformed group record is refused alone, before the
// commit.
func TestSharedBatchValidation(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	for _, r := range []SharedRecord{
		{Group: "", Filter: "t", Order: 1, MsgSeq: 1},
		{Group: "a/b", Filter: "t", Order: 1, MsgSeq: 1},
		{Group: "g+", Filter: "t", Order: 1, MsgSeq: 1},
		{Group: "g", Filter: "", Order: 1, MsgSeq: 1},
		{Group: "g", Filter: "t", Order: 1},
		{Group: "g", Filter: "t", Order: 1, MsgSeq: 1, Member: "a", PacketID: 0, QoS: 1},
		{Group: "g", Filter: "t", Order: 1, MsgSeq: 1, Member: "a", PacketID: 1, QoS: 0},
		{Group: "g", Filter: "t", Order: 1, MsgSeq: 1, PacketID: 3},
	} {
		var b Batch
		b.PutShared(r)
		if err := commit(t, j, &b); err == nil {
			t.Errorf("%+v: committed, want ErrInvalidBatch", r)
		}
	}
}

// TestSharedValueCorrupt: an undecodable group record stops start-up naming the bucket.
func TestSharedValueCorrupt(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketShared).Put(sharedKey("g", "t", 1), []byte{formatVersion, 9})
	})
	_, _, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
	if err == nil || !strings.Contains(err.Error(), "bucket shared") {
		t.Fatalf("Open: %v, want an error naming bucket shared", err)
	}
	rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bucketShared).Delete(sharedKey("g", "t", 1)) })
}

// Inspect counts each group's waiting and sent messages.
func TestInspectCountsGroupQueues(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	m := newMessage(j, "t", "x")
	var b Batch
	b.PutMessage(m)
	b.PutShared(SharedRecord{Group: "g", Filter: "t", Order: 1, MsgSeq: m.Seq, Member: "a", PacketID: 1, QoS: 1})
	b.PutShared(SharedRecord{Group: "g", Filter: "t", Order: 2, MsgSeq: m.Seq})
	b.PutShared(SharedRecord{Group: "g", Filter: "t", Order: 3, MsgSeq: m.Seq})
	b.PutShared(SharedRecord{Group: "h", Filter: "t", Order: 1, MsgSeq: m.Seq})
	mustCommit(t, j, &b)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []InspectedGroup{{Group: "g", Filter: "t", Waiting: 2, Sent: 1}, {Group: "h", Filter: "t", Waiting: 1}}
	if !reflect.DeepEqual(in.Shared, want) {
		t.Fatalf("groups %+v, want %+v", in.Shared, want)
	}
}
