package inflight

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"
	"time"
)

// Inspect reports every session with its ids and queue, and what the next Open would remove,
// without changing a byte of the file or its modification time.
func TestInspectReadsWithoutChanging(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	now := time.Now().UnixNano()
	b := &Batch{}
	b.PutSession(SessionRecord{ClientID: "a", ProtocolVersion: 5, ExpiryInterval: 3600}) // connected
	b.PutSubscription("a", SubscriptionRecord{Filter: "t/#", QoS: 2})
	b.PutInbound("a", 7, 0)
	m1, m2 := newMessage(j, "t/1", "12345"), newMessage(j, "t/2", "xy")
	b.PutMessage(m1)
	b.PutMessage(m2)
	b.PutOutbound("a", OutboundRecord{PacketID: 3, State: PublishSent, QoS: 2, Order: 1, MsgSeq: m1.Seq})
	b.PutOutbound("a", OutboundRecord{PacketID: 4, State: PubrelSent, QoS: 2, Order: 2})
	b.PutQueued("a", QueuedRecord{Order: 3, QoS: 2, MsgSeq: m1.Seq})
	b.PutQueued("a", QueuedRecord{Order: 4, QoS: 1, MsgSeq: m2.Seq})
	b.PutSession(SessionRecord{ClientID: "gone", ProtocolVersion: 4, ExpiryInterval: 1, DisconnectedAt: now - int64(time.Hour)})
	b.PutRetained(newMessage(j, "r", "kept"))
	mustCommit(t, j, b)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	st0, _ := os.Stat(path)

	in, err := Inspect(path, now)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if len(in.Sessions) != 1 || in.Sessions[0].Record.ClientID != "a" {
		t.Fatalf("sessions %+v, want a", in.Sessions)
	}
	s := in.Sessions[0]
	if s.Record.DisconnectedAt != 0 || s.Record.ExpiryInterval != 3600 {
		t.Errorf("session record %+v, want as stored (connected, expiry 3600)", s.Record)
	}
	if len(s.Subscriptions) != 1 || s.Subscriptions[0].Filter != "t/#" || len(s.Inbound) != 1 || s.Inbound[0].PacketID != 7 {
		t.Errorf("subscriptions %+v inbound %+v", s.Subscriptions, s.Inbound)
	}
	states := []string{}
	for _, o := range s.Outbound {
		states = append(states, o.State.String())
	}
	if !slices.Equal(states, []string{"publish-sent", "pubrel-sent"}) || s.Outbound[0].PacketID != 3 {
		t.Errorf("outbound %+v", s.Outbound)
	}
	if len(s.Queue) != 2 || s.QueuedBytes != 7 {
		t.Errorf("queue %d messages, %d bytes; want 2, 7", len(s.Queue), s.QueuedBytes)
	}
	if in.Retained != 1 || in.Messages != 2 || !slices.Equal(in.ExpiredSessions, []string{"gone"}) {
		t.Errorf("retained %d messages %d expired %q", in.Retained, in.Messages, in.ExpiredSessions)
	}
	if in.FileSize != st0.Size() || in.PageSize <= 0 || in.FreePages < 0 {
		t.Errorf("file size %d page size %d free %d", in.FileSize, in.PageSize, in.FreePages)
	}

	after, _ := os.ReadFile(path)
	st1, _ := os.Stat(path)
	if !bytes.Equal(before, after) || !st0.ModTime().Equal(st1.ModTime()) {
		t.Errorf("Inspect changed the file (bytes equal %t, mtime %v -> %v)", bytes.Equal(before, after), st0.ModTime(), st1.ModTime())
	}
}

// While a journal holds the file, Inspect says so instead of waiting.
func TestInspectFileInUse(t *testing.T) {
	_, _, path := openTest(t, "", nil)
	_, err := Inspect(path, time.Now().UnixNano())
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("Inspect of a held file: %v, want ErrInUse", err)
	}
}
