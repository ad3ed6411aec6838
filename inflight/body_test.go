package inflight

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// queueMessages commits n messages queued for one durable session and returns them.
func queueMessages(t *testing.T, j *Journal, n int) []*Message {
	t.Helper()
	var b Batch
	b.PutSession(SessionRecord{ClientID: "c", ExpiryInterval: NeverExpireForTest, DisconnectedAt: 1})
	var msgs []*Message
	for i := range n {
		m := newMessage(j, "t", fmt.Sprintf("payload %d", i))
		b.PutMessage(m)
		b.PutQueued("c", QueuedRecord{Order: uint64(i + 1), QoS: 1, MsgSeq: m.Seq})
		msgs = append(msgs, m)
	}
	mustCommit(t, j, &b)
	return msgs
}

// Start-up reads the index, never a body; the bodies are read one by one by LoadMessage, and
// each is read from the file once while the cache holds it.
func TestStartUpReadsNoBody(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	msgs := queueMessages(t, j, 50)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	before := bodiesRead.Load()
	j, rec, _ := openTest(t, path, nil)
	if got := bodiesRead.Load() - before; got != 0 {
		t.Fatalf("start-up read %d message bodies, want 0", got)
	}
	if len(rec.Messages) != len(msgs) {
		t.Fatalf("recovered %d messages, want %d", len(rec.Messages), len(msgs))
	}
	for _, m := range msgs {
		h := rec.Messages.Get(m.Seq)
		if h == nil || h.Size() != int64(len(m.Payload)+len(m.Topic)) || h.refs.Load() != 1 {
			t.Fatalf("index of %d = %+v", m.Seq, h)
		}
	}
	for range 2 {
		for _, m := range msgs {
			sameMessage(t, "loaded", loadMessage(t, j, m.Seq), m)
		}
	}
	if got := bodiesRead.Load() - before; got != int64(len(msgs)) {
		t.Errorf("loading every body twice read %d from the file, want %d (the second time from the cache)", got, len(msgs))
	}
}

// A body is in memory from its submit until its commit, whatever the cache's size: the file does
// not have it yet. After the commit it is in the log, not yet in bbolt: LoadMessage finds it
// there. After the checkpoint a cache of one byte keeps nothing, and the body comes from the file.
func TestLoadMessageBeforeAndAfterCommit(t *testing.T) {
	j, _, _ := openTest(t, "", &Options{MessageCache: 1, wal: walOptions{maxRecords: 1 << 30, maxAge: 1 << 62}})
	m := newMessage(j, "t", "body")
	var b Batch
	b.PutMessage(m)
	j.bodies.submitted(&b) // what Submit notes, without the commit that follows
	if got := loadMessage(t, j, m.Seq); got != m {
		t.Errorf("before the commit, LoadMessage = %p, want the submitted body %p", got, m)
	}
	j.bodies.committed(&b, false) // undo the manual note, then commit for real
	mustCommit(t, j, &b)
	if got := loadMessage(t, j, m.Seq); got != m {
		t.Errorf("after the commit, before the checkpoint, LoadMessage = %p, want the logged body %p", got, m)
	}
	if err := j.checkpointForCopy(); err != nil {
		t.Fatal(err)
	}
	before := bodiesRead.Load()
	sameMessage(t, "after the checkpoint", loadMessage(t, j, m.Seq), m)
	if bodiesRead.Load() == before {
		t.Error("a cache of one byte kept a body")
	}
	var del Batch
	del.DeleteMessage(m.Seq)
	mustCommit(t, j, &del)
	if err := j.checkpointForCopy(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.LoadMessage(m.Seq); !errors.Is(err, ErrNoBody) {
		t.Errorf("LoadMessage of a deleted message: %v, want ErrNoBody", err)
	}
}

// The cache keeps the most recently used bodies within its bytes and evicts the others.
func TestBodyCacheEvictsLeastRecentlyUsed(t *testing.T) {
	msg := func(n int) *Message { return &Message{Topic: "t", Payload: make([]byte, n)} }
	c := newBodyCache(3 * (100 + 1 + cacheOverhead))
	for seq := uint64(1); seq <= 3; seq++ {
		c.put(seq, msg(100))
	}
	c.get(1) // 2 is now the least recently used
	c.put(4, msg(100))
	for seq, want := range map[uint64]bool{1: true, 2: false, 3: true, 4: true} {
		if got := c.get(seq) != nil; got != want {
			t.Errorf("seq %d cached = %v, want %v", seq, got, want)
		}
	}
	c.put(5, msg(10*cacheOverhead)) // larger than the whole cache: not kept, nothing evicted
	if c.get(5) != nil || c.get(1) == nil || c.used > c.limit {
		t.Errorf("a body larger than the cache: kept %v, used %d of %d", c.get(5) != nil, c.used, c.limit)
	}
}

// A format 1 file has no bucket msgidx: its migration reads every body that one time and writes
// the index with them, and the next start-up reads no body.
func TestIndexBuiltByMigration(t *testing.T) {
	path := copyV1(t)
	before := bodiesRead.Load()
	j, rec, err := Open(path, &Options{Logger: testLogger(&logBuffer{}), Now: func() int64 { return v1Now }})
	if err != nil {
		t.Fatal(err)
	}
	if got := bodiesRead.Load() - before; got != 5 || len(rec.Messages) != 5 {
		t.Errorf("migration read %d bodies and recovered %d messages, want 5 and 5", got, len(rec.Messages))
	}
	for _, h := range rec.Messages {
		loadMessage(t, j, h.Seq)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	before = bodiesRead.Load()
	j, rec, err = Open(path, &Options{Logger: testLogger(&logBuffer{}), Now: func() int64 { return v1Now }})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if got := bodiesRead.Load() - before; got != 0 || len(rec.Messages) != 5 {
		t.Errorf("second start-up read %d bodies and recovered %d messages, want 0 and 5", got, len(rec.Messages))
	}
}

// An index record without its body, or a body without its index record, is damage (both are
// written and deleted in one batch): Open stops and lists them with the entries that refer to
// them, and Repair gives them up with those entries.
func TestIndexAndBodiesMatched(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	msgs := queueMessages(t, j, 3)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketMsgs).Delete(seqKey(msgs[0].Seq)); err != nil {
			return err
		}
		return tx.Bucket(bucketMsgIdx).Delete(seqKey(msgs[2].Seq))
	})
	_, _, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
	var de *DamageError
	if !errors.As(err, &de) {
		t.Fatalf("Open = %v, want a DamageError", err)
	}
	for _, want := range []string{
		fmt.Sprintf("bucket msgidx key %q (message %d): index record without its body (msgs)", seqKey(msgs[0].Seq), msgs[0].Seq),
		fmt.Sprintf("bucket msgs key %q (message %d): body without its index record (msgidx)", seqKey(msgs[2].Seq), msgs[2].Seq),
		fmt.Sprintf("(client \"c\", queue order 1, message %d): refers to message %d, which is damaged", msgs[0].Seq, msgs[0].Seq),
		fmt.Sprintf("(client \"c\", queue order 3, message %d): refers to message %d, which is damaged", msgs[2].Seq, msgs[2].Seq),
		"2 damaged records and 2 records that depend on them",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open error lacks %q:\n%v", want, err)
		}
	}
	if _, err := Repair(path, time.Unix(1_800_000_000, 0)); err != nil {
		t.Fatalf("Repair: %v", err)
	}
	j, rec, _ := openTest(t, path, nil)
	if len(rec.Messages) != 1 || rec.Messages.Get(msgs[1].Seq) == nil {
		t.Fatalf("recovered messages %v, want only %d", rec.Messages, msgs[1].Seq)
	}
	if q := rec.Sessions[0].Queue; len(q) != 1 || q[0].MsgSeq != msgs[1].Seq {
		t.Errorf("queue %+v, want only the entry of %d", q, msgs[1].Seq)
	}
	if _, err := j.LoadMessage(msgs[2].Seq); !errors.Is(err, ErrNoBody) {
		t.Errorf("the stray body of %d is still there (%v)", msgs[2].Seq, err)
	}
}
