package inflight

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
	bolt "go.etcd.io/bbolt"
)

func TestMQTTLogFileNameIsTheJournals(t *testing.T) {
	if got := logPath("/d/oncemq.db"); got != "/d/oncemq.wal" {
		t.Fatalf("logPath = %q; mqtt.LogFile says oncemq.wal", got)
	}
}

// everyOp is a batch with every kind of change, each field set, for the codec.
func everyOp() *Batch {
	b := &Batch{}
	owner := "alice"
	will := &Message{Topic: "w", Payload: []byte("bye"), QoS: 1}
	b.PutSession(SessionRecord{ClientID: "c", ProtocolVersion: 5, ExpiryInterval: 60, DisconnectedAt: 7, Will: &Will{Message: will, Delay: 3}, Owner: &owner})
	b.DeleteSession("gone")
	b.PutSubscription("c", SubscriptionRecord{Filter: "a/+", QoS: 2, NoLocal: true, RetainAsPublished: true, RetainHandling: 1, Identifier: 9})
	b.DeleteSubscription("c", "b/#")
	b.PutInbound("c", 17, 0x10)
	b.DeleteInbound("c", 18)
	b.PutOutbound("c", OutboundRecord{PacketID: 19, State: PublishSent, QoS: 2, Order: 4, MsgSeq: 5, SubIDs: []int{1, 268435455}, Retain: true})
	b.DeleteOutbound("c", 20)
	b.PutQueued("c", QueuedRecord{Order: 6, QoS: 1, MsgSeq: 5, SubIDs: []int{3}, Retain: true})
	b.DeleteQueued("c", 6)
	props := packets.Properties{ContentType: "text/plain", ResponseTopic: "r", CorrelationData: []byte{1, 2},
		User: []packets.UserProperty{{Key: "k", Val: "v"}}, MessageExpiryInterval: 30}
	b.PutMessage(&Message{Seq: 5, Topic: "a/b", Payload: []byte("hello"), QoS: 2, Retain: true, Properties: props, Created: 11, ExpiresAt: 12})
	b.DeleteMessage(4)
	b.PutRetained(&Message{Topic: "a/b", Payload: []byte("kept"), QoS: 1, Retain: true})
	b.DeleteRetained("x")
	b.PutDedup(DedupRecord{Key: DedupKey(DedupScopeTopic, "a/b", "id-1"), At: 99, Reason: 0x10})
	b.DeleteDedup(DedupKey(DedupScopeClient, "c", "id-0"))
	b.PutShared(SharedRecord{Group: "g", Filter: "a/#", Order: 3, MsgSeq: 5})
	b.PutShared(SharedRecord{Group: "g", Filter: "a/#", Order: 4, MsgSeq: 5, Member: "c", PacketID: 21, QoS: 2})
	b.DeleteShared("g", "a/#", 2)
	return b
}

// Every kind of change survives the log's codec: encoding the decoded batch gives the same bytes,
// and each field read back is the one written.
func TestBatchCodecRoundTrip(t *testing.T) {
	b := everyOp()
	kinds := map[opKind]bool{}
	for _, o := range b.ops {
		kinds[o.kind] = true
	}
	if len(kinds) != int(opDeleteShared) {
		t.Fatalf("everyOp has %d kinds of change, want all %d", len(kinds), opDeleteShared)
	}
	enc, err := appendOps(nil, b.ops)
	if err != nil {
		t.Fatal(err)
	}
	d := &decoder{buf: enc}
	ops, err := readOps(d)
	if err != nil || len(d.buf) != 0 {
		t.Fatalf("decode: %v, %d bytes left", err, len(d.buf))
	}
	again, err := appendOps(nil, ops)
	if err != nil || !bytes.Equal(enc, again) {
		t.Fatalf("re-encoding differs (%v)", err)
	}
	if got := ops[0].session; got.Will.Message.Payload == nil || *got.Owner != "alice" || got.Will.Delay != 3 {
		t.Errorf("session: %+v", got)
	}
	if got := ops[6].out; got.PacketID != 19 || got.MsgSeq != 5 || len(got.SubIDs) != 2 || !got.Retain {
		t.Errorf("outbound: %+v", got)
	}
	if got := ops[10].msg; got.Seq != 5 || string(got.Payload) != "hello" || got.Properties.ContentType != "text/plain" || got.ExpiresAt != 12 {
		t.Errorf("message: %+v", got)
	}
	if got := ops[14].dedup; got.At != 99 || got.Reason != 0x10 {
		t.Errorf("dedup: %+v", got)
	}
	// Every prefix of the encoding is refused, never read as something else.
	for n := range len(enc) {
		if _, err := readOps(&decoder{buf: enc[:n]}); err == nil {
			t.Fatalf("a record cut at %d of %d bytes decoded", n, len(enc))
		}
	}
}

// record builds one log record with index i holding b.
func record(t *testing.T, i uint64, b *Batch) []byte {
	t.Helper()
	buf := append(make([]byte, logHeader), logVersion)
	buf = binary.BigEndian.AppendUint64(buf, i)
	buf = binary.AppendUvarint(buf, 1)
	buf, err := appendOps(buf, b.ops)
	if err != nil {
		t.Fatal(err)
	}
	var f memLog
	seg := &segment{file: &f}
	if err := seg.write(buf, true); err != nil {
		t.Fatal(err)
	}
	return f.Bytes()
}

type memLog struct{ bytes.Buffer }

func (*memLog) Sync() error              { return nil }
func (m *memLog) Truncate(n int64) error { m.Buffer.Truncate(int(n)); return nil }
func (*memLog) Close() error             { return nil }

// A torn tail (short header, short payload, checksum mismatch, zeros) is an unacknowledged write:
// the records before it are read and the tail reported. A bad record followed by a good one is
// damage, and so is a gap in the indexes: both are ErrCorrupt, with the offset.
func TestDecodeLogTornTailAndDamage(t *testing.T) {
	r1, r2, r3 := record(t, 1, everyOp()), record(t, 2, inboundBatch("c", 1)), record(t, 3, inboundBatch("c", 2))
	good := slices3(r1, r2)
	flip := func(b []byte, at int) []byte { b = bytes.Clone(b); b[at] ^= 0x40; return b }
	for name, tail := range map[string][]byte{
		"short header":   r3[:5],
		"short payload":  r3[:len(r3)-1],
		"checksum":       flip(r3, len(r3)-2),
		"length garbage": flip(r3, 0),
	} {
		l, err := decodeLog("x.wal", append(bytes.Clone(good), tail...))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(l.records) != 2 || l.torn != int64(len(good)) {
			t.Errorf("%s: %d records, torn at %d; want 2, %d", name, len(l.records), l.torn, len(good))
		}
	}
	// Zeros after the last record are the preallocated end of a segment, not a torn write.
	if l, err := decodeLog("x.wal", append(bytes.Clone(good), make([]byte, 4096)...)); err != nil || len(l.records) != 2 || l.torn != -1 || l.used != int64(len(good)) {
		t.Errorf("preallocated zeros after the records: %+v, %v", l, err)
	}
	for name, data := range map[string][]byte{
		"flipped middle record": slices3(r1, flip(r2, len(r2)-3), r3),
		"flipped length":        slices3(r1, flip(r2, 1), r3),
		"gap":                   slices3(r1, r3),
	} {
		_, err := decodeLog("x.wal", data)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: err = %v, want ErrCorrupt with the offset", name, err)
		}
	}
}

func slices3(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// A journal closed cleanly leaves an empty log (Close checkpoints); one that was not (the process
// died) leaves records that the next Open replays, and the log index makes a replayed record that
// is still in the log harmless.
func TestLogReplayAfterACrash(t *testing.T) {
	path := testPath(t)
	j, _, _ := openTest(t, path, &Options{wal: walOptions{maxRecords: 1 << 30, maxAge: 1 << 62}})
	mustCommit(t, j, sessionBatch("c", 1))
	mustCommit(t, j, inboundBatch("c", 2))
	// A crash: the committer stops where it is; the log keeps both records, bbolt has none.
	logged, err := os.ReadFile(logPath(path))
	if err != nil || len(logged) == 0 {
		t.Fatalf("log after two commits: %d bytes, %v", len(logged), err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(logPath(path)); err != nil || !allZero(data) {
		t.Fatalf("log after Close: %v, %d bytes not all zero; want empty", err, len(data))
	}
	// Put the log back as the crash left it: its records are covered by the index now.
	if err := os.WriteFile(logPath(path), logged, 0o600); err != nil {
		t.Fatal(err)
	}
	j2, rec, _ := openTest(t, path, nil)
	if s := session(rec, "c"); s == nil || len(s.Inbound) != 2 {
		t.Fatalf("after reopening over a covered log: %+v", s)
	}
	mustCommit(t, j2, inboundBatch("c", 3))
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
}

// A message put by a logged batch is readable through loggedMessage until a checkpoint puts it in
// bbolt, and not after it is deleted: a body read from the file consults it first.
func TestLoggedMessageUntilCheckpoint(t *testing.T) {
	j, _, _ := openTest(t, "", &Options{wal: walOptions{maxRecords: 1 << 30, maxAge: 1 << 62}})
	m, gone := newMessage(j, "t", "logged"), newMessage(j, "t", "deleted")
	var b Batch
	b.PutMessage(m)
	b.PutMessage(gone)
	mustCommit(t, j, &b)
	var del Batch
	del.DeleteMessage(gone.Seq)
	mustCommit(t, j, &del)
	if got, ok := j.loggedMessage(m.Seq); !ok || got != m {
		t.Fatalf("loggedMessage(%d) = %v, %v before the checkpoint", m.Seq, got, ok)
	}
	if _, ok := j.loggedMessage(gone.Seq); ok {
		t.Errorf("a deleted message is still in the log's map")
	}
	if keys := rawKeysOpen(t, j); len(keys) != 0 {
		t.Fatalf("bbolt has messages %v before any checkpoint", keys)
	}
	if err := j.checkpointForCopy(); err != nil {
		t.Fatal(err)
	}
	if _, ok := j.loggedMessage(m.Seq); ok {
		t.Errorf("loggedMessage still holds %d after the checkpoint", m.Seq)
	}
	if keys := rawKeysOpen(t, j); len(keys) != 1 {
		t.Errorf("bbolt after the checkpoint holds messages %v, want the one not deleted", keys)
	}
}

// rawKeysOpen lists bucket msgs of an open journal.
func rawKeysOpen(t *testing.T, j *Journal) []string {
	t.Helper()
	var keys []string
	err := j.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMsgs).ForEach(func(k, _ []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
