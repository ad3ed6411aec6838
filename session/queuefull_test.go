package session

import (
	"slices"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// fullSetup is a broker with an offline session "full" whose queue holds one message of its two
// bytes allowed, an online session "other" on the same filter, and a publisher.
func fullSetup(t *testing.T, policy QueueFullPolicy) (b *Broker, other *fakeConn, pub *Session, pubConn *fakeConn) {
	t.Helper()
	b = newTestBroker(t)
	b.opts.MaxQueuedBytes = 10
	b.opts.QueueFull = policy
	full, fullConn := connect(t, b, "full", 3600)
	b.Subscribe(full, fullConn, 1, []SubscriptionRequest{{Filter: "q", QoS: 2}})
	fullConn.next(t, packets.Suback)
	b.Disconnected(full, fullConn, false, nil)
	o, oConn := connect(t, b, "other", 3600)
	b.Subscribe(o, oConn, 1, []SubscriptionRequest{{Filter: "q", QoS: 1}})
	oConn.next(t, packets.Suback)
	pub, pubConn = connect(t, b, "pub", 0)
	if err := b.Publish(pub, pubConn, &inflight.Message{Topic: "q", Payload: []byte("1234567"), QoS: 2}, 1, 100); err != nil {
		t.Fatal(err)
	}
	if pk := pubConn.next(t, packets.Pubrec); pk.ReasonCode != 0 {
		t.Fatalf("first PUBREC 0x%02X, want success", pk.ReasonCode)
	}
	b.Puback(o, oConn, oConn.next(t, packets.Publish).PacketID) // "other" holds nothing again
	return b, oConn, pub, pubConn
}

// A QoS 2 PUBLISH that would overflow one matching session's queue (bytes) is refused with PUBREC
// 0x97 before anything is stored: no session gets it, the id stays free [MQTT-4.3.3-9], and the full
// session is named in Stats.
func TestQueueFullRefusesBeforeAck_MQTT_4_3_3_9(t *testing.T) {
	var refused []string
	b, other, pub, pubConn := fullSetup(t, RefuseWhenFull)
	b.opts.OnRefuse = func(clientID, topic string) { refused = append(refused, clientID+" "+topic) }
	if err := b.Publish(pub, pubConn, &inflight.Message{Topic: "q", Payload: []byte("abcdefg"), QoS: 2}, 2, 100); err != nil {
		t.Fatal(err)
	}
	if pk := pubConn.next(t, packets.Pubrec); reason.Code(pk.ReasonCode) != reason.QuotaExceeded {
		t.Fatalf("PUBREC 0x%02X, want 0x97", pk.ReasonCode)
	}
	b.mu.Lock()
	_, inbound := pub.inbound.Lookup(2)
	b.mu.Unlock()
	if inbound {
		t.Error("a refused QoS 2 id entered the inbound table")
	}
	other.nothing(t)
	st := b.Stats()
	if st.QueueRefused != 1 || !slices.Equal(st.FullSessions, []string{"full"}) || st.QueueOverflow != 0 {
		t.Errorf("Stats: refused %d, full %v, dropped %d; want 1, [full], 0", st.QueueRefused, st.FullSessions, st.QueueOverflow)
	}
	if !slices.Equal(refused, []string{"full q"}) {
		t.Errorf("OnRefuse told %q", refused)
	}
	// A QoS 1 PUBLISH is refused the same way, with PUBACK 0x97.
	if err := b.Publish(pub, pubConn, &inflight.Message{Topic: "q", Payload: []byte("abcdefg"), QoS: 1}, 3, 100); err != nil {
		t.Fatal(err)
	}
	if pk := pubConn.next(t, packets.Puback); reason.Code(pk.ReasonCode) != reason.QuotaExceeded {
		t.Fatalf("PUBACK 0x%02X, want 0x97", pk.ReasonCode)
	}
}

// 3.1.1 has no refusal code: the publisher's connection is closed, nothing acknowledged.
func TestQueueFullClosesV311Publisher(t *testing.T) {
	b, _, _, _ := fullSetup(t, RefuseWhenFull)
	c := newFakeConn()
	done := make(chan error, 1)
	s := b.Connect(ConnectRequest{ClientID: "old", ProtocolVersion: 4, CleanStart: true}, c, func(_ bool, err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(s, c, &inflight.Message{Topic: "q", Payload: []byte("abcdefg"), QoS: 1}, 1, 100); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed || len(c.sent) != 0 {
		t.Fatalf("closed %v, sent %d packets; want closed without an acknowledgement", c.closed, len(c.sent))
	}
}

// With DropNew the PUBLISH is acknowledged, the full session misses it (counted), the others get it.
func TestQueueFullDropNew(t *testing.T) {
	b, other, pub, pubConn := fullSetup(t, DropNew)
	if err := b.Publish(pub, pubConn, &inflight.Message{Topic: "q", Payload: []byte("abcdefg"), QoS: 2}, 2, 100); err != nil {
		t.Fatal(err)
	}
	if pk := pubConn.next(t, packets.Pubrec); pk.ReasonCode != 0 {
		t.Fatalf("PUBREC 0x%02X, want success", pk.ReasonCode)
	}
	other.next(t, packets.Publish)
	if st := b.Stats(); st.QueueOverflow != 1 || st.Queued != 1 {
		t.Errorf("dropped %d, queued %d; want 1, 1", st.QueueOverflow, st.Queued)
	}
}

// With DropOldest the full session's oldest message makes room for the new one.
func TestQueueFullDropOldest(t *testing.T) {
	b, _, pub, pubConn := fullSetup(t, DropOldest)
	if err := b.Publish(pub, pubConn, &inflight.Message{Topic: "q", Payload: []byte("abcdefg"), QoS: 2}, 2, 100); err != nil {
		t.Fatal(err)
	}
	pubConn.next(t, packets.Pubrec)
	b.mu.Lock()
	q := b.sessions["full"].queue
	b.mu.Unlock()
	var body *inflight.Message
	if len(q) == 1 {
		body, _ = b.journal.LoadMessage(q[0].msg.Seq)
	}
	if body == nil || string(body.Payload) != "abcdefg" || b.Metrics.QueueOverflow.Load() != 1 {
		t.Fatalf("queue %d messages, dropped %d; want the new one only, 1 dropped", len(q), b.Metrics.QueueOverflow.Load())
	}
}

// A connection whose write queue is full (Reserve false) leaves messages in the session's queue;
// Drained sends them, in order.
func TestWriteQueueFullKeepsMessagesQueued(t *testing.T) {
	b := newTestBroker(t)
	sub, subConn := connect(t, b, "sub", 3600)
	b.Subscribe(sub, subConn, 1, []SubscriptionRequest{{Filter: "q", QoS: 1}})
	subConn.next(t, packets.Suback)
	subConn.mu.Lock()
	subConn.noRoom = true
	subConn.mu.Unlock()
	pub, pubConn := connect(t, b, "pub", 0)
	for i, p := range []string{"a", "b", "c"} {
		if err := b.Publish(pub, pubConn, &inflight.Message{Topic: "q", Payload: []byte(p), QoS: 1}, uint16(i+1), 100); err != nil {
			t.Fatal(err)
		}
		pubConn.next(t, packets.Puback)
	}
	subConn.nothing(t)
	if st := b.Stats(); st.Queued != 3 {
		t.Fatalf("queued %d, want 3", st.Queued)
	}
	subConn.mu.Lock()
	subConn.noRoom = false
	subConn.mu.Unlock()
	b.Drained(sub, subConn)
	var got []string
	for range 3 {
		got = append(got, string(subConn.next(t, packets.Publish).Payload))
	}
	if strings.Join(got, "") != "abc" {
		t.Fatalf("got %q, want a b c", got)
	}
}

// Subscriptions per session are bounded: past Options.MaxSubscriptions a new filter gets 0x97.
func TestMaxSubscriptions(t *testing.T) {
	b := newTestBroker(t)
	b.opts.MaxSubscriptions = 2
	s, c := connect(t, b, "s", 0)
	b.Subscribe(s, c, 1, []SubscriptionRequest{{Filter: "a"}, {Filter: "b"}, {Filter: "a", QoS: 1}, {Filter: "c"}})
	got := c.next(t, packets.Suback).ReasonCodes
	if !slices.Equal(got, []byte{0, 0, 1, byte(reason.QuotaExceeded)}) {
		t.Fatalf("SUBACK %v", got)
	}
}

// Sessions are bounded: a new session past Options.MaxSessions is refused; an existing one resumes.
func TestMaxSessions(t *testing.T) {
	b := newTestBroker(t)
	b.opts.MaxSessions = 1
	connect(t, b, "one", 3600)
	done := make(chan error, 1)
	if s := b.Connect(ConnectRequest{ClientID: "two", ProtocolVersion: 5}, newFakeConn(), func(_ bool, err error) { done <- err }); s != nil {
		t.Error("a session was made past the limit")
	}
	if err := <-done; err != ErrTooManySessions {
		t.Fatalf("err %v, want ErrTooManySessions", err)
	}
	connect(t, b, "one", 3600)
}

// Retained messages are bounded: a new retained topic past the limit is refused with 0x97.
func TestMaxRetained(t *testing.T) {
	b := newTestBroker(t)
	b.opts.MaxRetained = 1
	pub, c := connect(t, b, "pub", 0)
	for i, topic := range []string{"r1", "r1", "r2"} {
		if err := b.Publish(pub, c, &inflight.Message{Topic: topic, Payload: []byte("v"), QoS: 1, Retain: true}, uint16(i+1), 100); err != nil {
			t.Fatal(err)
		}
	}
	codes := []byte{c.next(t, packets.Puback).ReasonCode, c.next(t, packets.Puback).ReasonCode, c.next(t, packets.Puback).ReasonCode}
	if !slices.Equal(codes, []byte{0x10, 0x10, byte(reason.QuotaExceeded)}) {
		t.Fatalf("PUBACK codes %x", codes)
	}
}
