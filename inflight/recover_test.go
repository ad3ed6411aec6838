package inflight

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

const second = int64(1e9)

func TestRoundTripEveryRecord(t *testing.T) {
	const now = 1_800_000_000 * second
	opts := &Options{Now: func() int64 { return now }}
	j, rec, path := openTest(t, "", opts)
	if len(rec.Sessions) != 0 || len(rec.Retained) != 0 || len(rec.Messages) != 0 || rec.Expired != 0 {
		t.Fatalf("new file: recovered %+v", rec)
	}

	will := newMessage(j, "wills/alice", "bye")
	will.Seq = 0
	alice := SessionRecord{ClientID: "alice", ProtocolVersion: 5, ExpiryInterval: 3600,
		DisconnectedAt: now - 5*second, Will: &Will{Message: will, Delay: 30}}
	bob := SessionRecord{ClientID: "bob", ProtocolVersion: 4, ExpiryInterval: neverExpires} // connected
	subs := []SubscriptionRecord{
		{Filter: "a/#", QoS: 2, NoLocal: true, RetainAsPublished: true, RetainHandling: 2, Identifier: 7},
		{Filter: "b/+/c", QoS: 1},
	}
	shared := newMessage(j, "a/1", "shared by out and queue")
	queuedOnly := newMessage(j, "a/2", "")
	queuedOnly.QoS, queuedOnly.Retain, queuedOnly.Properties = 1, true, packets.Properties{}
	orphan := newMessage(j, "a/3", "nobody refers to me")
	retained := newMessage(j, "status/x", "online")
	retained.Retain = true
	retained0 := &Message{Seq: j.NextSeq(), Topic: "status/y", Payload: []byte("qos0"), Retain: true}

	outbound := []OutboundRecord{
		{PacketID: 65535, State: PubrelSent, QoS: 2, Order: 3},
		{PacketID: 1, State: PublishSent, QoS: 2, Order: 9, MsgSeq: shared.Seq, SubIDs: []int{7, maxSubscriptionID}, Retain: true},
	}
	queue := []QueuedRecord{
		{Order: 10, QoS: 2, MsgSeq: shared.Seq, SubIDs: []int{1}},
		{Order: 11, QoS: 1, MsgSeq: queuedOnly.Seq, Retain: true},
	}
	inbound := []InboundRecord{{PacketID: 1, Reason: 0x00}, {PacketID: 65535, Reason: 0x10}}

	var b Batch
	b.PutSession(alice)
	b.PutSession(bob)
	for _, s := range subs {
		b.PutSubscription("alice", s)
	}
	for _, in := range inbound {
		b.PutInbound("alice", in.PacketID, in.Reason)
	}
	b.PutMessage(shared)
	b.PutMessage(queuedOnly)
	b.PutMessage(orphan)
	for _, o := range outbound {
		b.PutOutbound("alice", o)
	}
	for _, q := range queue {
		b.PutQueued("alice", q)
	}
	b.PutRetained(retained)
	b.PutRetained(retained0)
	b.PutInbound("bob", 5, 0x91)
	mustCommit(t, j, &b)
	lastSeq := orphan.Seq // the largest sequence in bucket msgs
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	j, rec, _ = openTest(t, path, opts)
	if rec.Expired != 0 {
		t.Errorf("Expired = %d, want 0", rec.Expired)
	}
	if len(rec.Sessions) != 2 {
		t.Fatalf("recovered %d sessions, want 2", len(rec.Sessions))
	}
	a := session(rec, "alice")
	if !reflect.DeepEqual(a.Record, alice) {
		t.Errorf("alice record:\n got %+v\nwant %+v", a.Record, alice)
	}
	sameMessage(t, "will", a.Record.Will.Message, will)
	if !reflect.DeepEqual(a.Subscriptions, subs) {
		t.Errorf("subscriptions:\n got %+v\nwant %+v", a.Subscriptions, subs)
	}
	if !reflect.DeepEqual(a.Inbound, inbound) {
		t.Errorf("inbound:\n got %+v\nwant %+v", a.Inbound, inbound)
	}
	if !reflect.DeepEqual(a.Outbound, outbound) { // sorted by Order, not by packet id
		t.Errorf("outbound:\n got %+v\nwant %+v", a.Outbound, outbound)
	}
	if !reflect.DeepEqual(a.Queue, queue) {
		t.Errorf("queue:\n got %+v\nwant %+v", a.Queue, queue)
	}

	bobRec := session(rec, "bob")
	wantBob := bob
	wantBob.DisconnectedAt = now // connected when the broker stopped: disconnected at the restart
	if !reflect.DeepEqual(bobRec.Record, wantBob) {
		t.Errorf("bob record:\n got %+v\nwant %+v", bobRec.Record, wantBob)
	}
	if want := []InboundRecord{{PacketID: 5, Reason: 0x91}}; !reflect.DeepEqual(bobRec.Inbound, want) {
		t.Errorf("bob inbound = %+v, want %+v", bobRec.Inbound, want)
	}

	if len(rec.Messages) != 2 {
		t.Errorf("recovered %d messages, want 2 (the orphan removed)", len(rec.Messages))
	}
	for _, want := range []*Message{shared, queuedOnly} {
		h := rec.Messages.Get(want.Seq)
		if h == nil {
			t.Fatalf("message %d not recovered", want.Seq)
		}
		if h.ExpiresAt != want.ExpiresAt || h.Size() != int64(len(want.Payload)+len(want.Topic)) {
			t.Errorf("index of %d: expires %d, size %d; want %d, %d", want.Seq, h.ExpiresAt, h.Size(), want.ExpiresAt, len(want.Payload)+len(want.Topic))
		}
		sameMessage(t, want.Topic, loadMessage(t, j, want.Seq), want)
	}
	if n := rec.Messages.Get(shared.Seq).refs.Load(); n != 2 {
		t.Errorf("shared message refs = %d, want 2", n)
	}
	if rec.Messages.Get(shared.Seq).Ref() {
		t.Errorf("a recovered message is already written: Ref must not ask for PutMessage")
	}

	slices.SortFunc(rec.Retained, func(x, y *Message) int { return strings.Compare(x.Topic, y.Topic) })
	if len(rec.Retained) != 2 {
		t.Fatalf("recovered %d retained, want 2", len(rec.Retained))
	}
	seqs := map[uint64]bool{}
	for i, want := range []*Message{retained, retained0} {
		got := rec.Retained[i]
		if got.Seq <= lastSeq || seqs[got.Seq] {
			t.Errorf("retained %q got Seq %d: want a new one, above %d and unique", got.Topic, got.Seq, lastSeq)
		}
		seqs[got.Seq] = true
		want.Seq = got.Seq
		sameMessage(t, "retained "+want.Topic, got, want)
	}
	if next := j.NextSeq(); next <= lastSeq || seqs[next] {
		t.Errorf("NextSeq after reopen = %d, want above %d and the retained messages' sequences", next, lastSeq)
	}
}

func TestDecodedMessageDoesNotAliasFile(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	m := newMessage(j, "t", "payload")
	var b Batch
	b.PutSession(SessionRecord{ClientID: "c", ExpiryInterval: 60, DisconnectedAt: 1})
	b.PutMessage(m)
	b.PutQueued("c", QueuedRecord{Order: 1, QoS: 2, MsgSeq: m.Seq})
	mustCommit(t, j, &b)
	j.Close()

	j, _, _ = openTest(t, path, &Options{Now: func() int64 { return 2 }, MessageCache: 1})
	got := loadMessage(t, j, m.Seq)
	// Write enough to move bbolt's pages around and remap the file, then check the message.
	big := bytes.Repeat([]byte{0xAA}, 1<<20)
	for i := range 8 {
		var b Batch
		mm := &Message{Seq: j.NextSeq(), Topic: "fill", Payload: big, QoS: 1}
		b.PutMessage(mm)
		b.PutQueued("c", QueuedRecord{Order: uint64(10 + i), QoS: 1, MsgSeq: mm.Seq})
		mustCommit(t, j, &b)
	}
	sameMessage(t, "message read at open", got, m)
}

func TestDeleteSessionRemovesOnlyThatClient(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	fill := func(b *Batch, clientID string) *Message {
		m := newMessage(j, "t/"+clientID, clientID)
		b.PutSession(SessionRecord{ClientID: clientID, ExpiryInterval: neverExpires, DisconnectedAt: 1})
		b.PutSubscription(clientID, SubscriptionRecord{Filter: "t/#", QoS: 2})
		b.PutSubscription(clientID, SubscriptionRecord{Filter: "~/ÿ", QoS: 1})
		b.PutInbound(clientID, 1, 0)
		b.PutInbound(clientID, 0xFFFF, 0)
		b.PutMessage(m)
		b.PutOutbound(clientID, OutboundRecord{PacketID: 1, State: PublishSent, QoS: 2, Order: 1, MsgSeq: m.Seq})
		b.PutOutbound(clientID, OutboundRecord{PacketID: 2, State: PubrelSent, QoS: 2, Order: 2})
		b.PutQueued(clientID, QueuedRecord{Order: 3, QoS: 2, MsgSeq: m.Seq})
		b.PutQueued(clientID, QueuedRecord{Order: ^uint64(0), QoS: 2, MsgSeq: m.Seq})
		return m
	}
	var b Batch
	ma := fill(&b, "a")
	mab := fill(&b, "ab")
	fill(&b, "a\x01") // sorts right after "a\x00..." keys
	fill(&b, "`")     // sorts right before "a"
	mustCommit(t, j, &b)

	var del Batch
	del.DeleteSession("a")
	del.DeleteMessage(ma.Seq)
	mustCommit(t, j, &del)
	j.Close()

	for _, bucket := range [][]byte{bucketSubs, bucketIn, bucketOut, bucketQueue} {
		keys := rawKeys(t, path, bucket)
		for _, k := range keys {
			if strings.HasPrefix(k, "a\x00") {
				t.Errorf("bucket %s: key %q of the deleted session left", bucket, k)
			}
		}
		if len(keys) != 3*2 {
			t.Errorf("bucket %s: %d keys, want 6 (two for each of the other three clients): %q", bucket, len(keys), keys)
		}
	}
	if keys := rawKeys(t, path, bucketSessions); !reflect.DeepEqual(keys, []string{"`", "a\x01", "ab"}) {
		t.Errorf("sessions = %q", keys)
	}

	_, rec, _ := openTest(t, path, nil)
	if session(rec, "a") != nil {
		t.Errorf("deleted session recovered")
	}
	ab := session(rec, "ab")
	if ab == nil || len(ab.Subscriptions) != 2 || len(ab.Inbound) != 2 || len(ab.Outbound) != 2 || len(ab.Queue) != 2 {
		t.Fatalf("session ab damaged: %+v", ab)
	}
	if n := rec.Messages.Get(mab.Seq).refs.Load(); n != 3 {
		t.Errorf("message of ab has %d refs, want 3", n)
	}
}

func TestSessionExpiryAtOpen(t *testing.T) {
	const t0 = 1_800_000_000 * second
	now := int64(t0)
	opts := &Options{Now: func() int64 { return now }}
	j, _, path := openTest(t, "", opts)

	var b Batch
	msgs := map[string]*Message{}
	for _, s := range []SessionRecord{
		{ClientID: "expires-now", ExpiryInterval: 10, DisconnectedAt: t0},
		{ClientID: "one-ns-left", ExpiryInterval: 10, DisconnectedAt: t0 + 1},
		{ClientID: "never", ExpiryInterval: neverExpires, DisconnectedAt: 1},
		{ClientID: "was-connected", ExpiryInterval: 10},
		{ClientID: "zero-interval", ExpiryInterval: 0},
	} {
		m := newMessage(j, "t", s.ClientID)
		msgs[s.ClientID] = m
		b.PutSession(s)
		b.PutSubscription(s.ClientID, SubscriptionRecord{Filter: "t", QoS: 2})
		b.PutInbound(s.ClientID, 9, 0)
		b.PutMessage(m)
		b.PutQueued(s.ClientID, QueuedRecord{Order: 1, QoS: 2, MsgSeq: m.Seq})
	}
	mustCommit(t, j, &b)
	j.Close()

	now = t0 + 10*second
	j, rec, _ := openTest(t, path, opts)
	if rec.Expired != 2 {
		t.Errorf("Expired = %d, want 2", rec.Expired)
	}
	var live []string
	for _, s := range rec.Sessions {
		live = append(live, s.Record.ClientID)
		if len(s.Queue) != 1 || rec.Messages.Get(s.Queue[0].MsgSeq) == nil {
			t.Errorf("%s: queue lost: %+v", s.Record.ClientID, s.Queue)
		}
	}
	if want := []string{"never", "one-ns-left", "was-connected"}; !reflect.DeepEqual(live, want) {
		t.Errorf("sessions after expiry = %q, want %q", live, want)
	}
	if got := session(rec, "was-connected").Record.DisconnectedAt; got != now {
		t.Errorf("was-connected: DisconnectedAt = %d, want the restart time %d", got, now)
	}
	for _, id := range []string{"expires-now", "zero-interval"} {
		if rec.Messages.Get(msgs[id].Seq) != nil {
			t.Errorf("%s: its message survived the session", id)
		}
	}
	j.Close()
	for _, bucket := range [][]byte{bucketSubs, bucketIn, bucketQueue} {
		if n := len(rawKeys(t, path, bucket)); n != 3 {
			t.Errorf("bucket %s has %d keys, want 3", bucket, n)
		}
	}
	if n := len(rawKeys(t, path, bucketMsgs)); n != 3 {
		t.Errorf("bucket msgs has %d keys, want 3", n)
	}

	// The expiry of a session that was connected counts from the restart, and was stored.
	now += 10 * second
	_, rec, _ = openTest(t, path, opts)
	if rec.Expired != 2 || session(rec, "was-connected") != nil || session(rec, "one-ns-left") != nil {
		t.Errorf("second restart: Expired = %d, sessions %+v", rec.Expired, rec.Sessions)
	}
}

// An entry whose message is missing is damage (batches are atomic, so no crash leaves one): Open
// stops and names every such entry, and changes nothing. An entry without a session record and a
// message nothing refers to are still removed with a warning and a count.
func TestMissingMessageStopsOpen(t *testing.T) {
	path := testPath(t)
	j, _, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.PutSession(SessionRecord{ClientID: "victim", ExpiryInterval: 60, DisconnectedAt: 1 << 62})
	b.PutOutbound("victim", OutboundRecord{PacketID: 4, State: PublishSent, QoS: 2, Order: 1, MsgSeq: 12345})
	b.PutOutbound("victim", OutboundRecord{PacketID: 5, State: PublishSent, QoS: 2, Order: 2}) // no message at all
	b.PutQueued("victim", QueuedRecord{Order: 3, QoS: 1, MsgSeq: 12346})
	mustCommit(t, j, &b)
	j.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Open(path, &Options{Logger: testLogger(&logBuffer{})})
	var de *DamageError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &de) {
		t.Fatalf("Open = %v, want ErrCorrupt with a DamageError", err)
	}
	if de.Damaged() != 3 || len(de.Records) != 3 {
		t.Errorf("%d damaged of %d records, want 3 of 3:\n%v", de.Damaged(), len(de.Records), err)
	}
	for _, want := range []string{path, "3 damaged records",
		`bucket out key "victim\x00\x00\x04" (client "victim", packet id 4, message 12345): refers to message 12345, which is missing`,
		`bucket out key "victim\x00\x00\x05" (client "victim", packet id 5): refers to message 0, which is missing`,
		`bucket queue key "victim\x00\x00\x00\x00\x00\x00\x00\x00\x03" (client "victim", queue order 3, message 12346): refers to message 12346, which is missing`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the refused file changed (%v)", err)
	}
}

func TestStrayEntriesRemovedAtOpen(t *testing.T) {
	logs := &logBuffer{}
	opts := &Options{Logger: testLogger(logs)}
	j, _, path := openTest(t, "", opts)
	var b Batch
	b.PutInbound("ghost", 1, 0) // no session record
	b.PutMessage(newMessage(j, "t", "orphan"))
	mustCommit(t, j, &b)
	j.Close()

	j, rec, _ := openTest(t, path, opts)
	if len(rec.Sessions) != 0 || len(rec.Messages) != 0 {
		t.Errorf("recovered %+v", rec)
	}
	out := logs.String()
	for _, want := range []string{"level=WARN", "client=ghost", "orphans_removed=1", "broken_removed=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	j.Close()
	for _, bucket := range [][]byte{bucketIn, bucketMsgs} {
		if keys := rawKeys(t, path, bucket); len(keys) != 0 {
			t.Errorf("bucket %s still has %q", bucket, keys)
		}
	}
}
