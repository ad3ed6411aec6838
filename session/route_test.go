package session

import (
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// fakeConn records what the broker sends it.
type fakeConn struct {
	mu     sync.Mutex
	sent   []packets.Packet
	closed bool
	noRoom bool
	got    chan struct{}
}

func newFakeConn() *fakeConn { return &fakeConn{got: make(chan struct{}, 1000)} }

func (c *fakeConn) Send(o Outgoing) {
	c.mu.Lock()
	c.sent = append(c.sent, o.Packet())
	c.mu.Unlock()
	c.got <- struct{}{}
}

func (c *fakeConn) Close(reason.Code) {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// Reserve says no while the test has set noRoom: the connection's write queue is full.
func (c *fakeConn) Reserve(int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.noRoom
}

// next waits for the next packet of type typ and returns it, skipping nothing.
func (c *fakeConn) next(t *testing.T, typ byte) packets.Packet {
	t.Helper()
	select {
	case <-c.got:
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5s", packets.PacketNames[typ])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pk := c.sent[0]
	c.sent = c.sent[1:]
	if pk.FixedHeader.Type != typ {
		t.Fatalf("got %s, want %s", packets.PacketNames[pk.FixedHeader.Type], packets.PacketNames[typ])
	}
	return pk
}

func (c *fakeConn) nothing(t *testing.T) {
	t.Helper()
	select {
	case <-c.got:
		t.Fatalf("unexpected %s", packets.PacketNames[c.sent[0].FixedHeader.Type])
	case <-time.After(100 * time.Millisecond):
	}
}

func newTestBroker(t *testing.T) *Broker {
	t.Helper()
	j, rec, err := inflight.Open(filepath.Join(t.TempDir(), "oncemq.db"), &inflight.Options{NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b := New(j, rec, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() {
		b.Close()
		if err := j.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

func connect(t *testing.T, b *Broker, id string, expiry uint32) (*Session, *fakeConn) {
	t.Helper()
	c := newFakeConn()
	done := make(chan error, 1)
	s := b.Connect(ConnectRequest{ClientID: id, ProtocolVersion: 5, CleanStart: true, ExpiryInterval: expiry}, c,
		func(_ bool, err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return s, c
}

// [MQTT-3.3.4-2] [MQTT-3.8.4-8]: overlapping subscriptions of one session deliver the message once,
// at the highest granted QoS (never above the published QoS), with every Subscription Identifier.
func TestOverlappingSubscriptionsDeliverOnce_MQTT_3_3_4_2(t *testing.T) {
	b := newTestBroker(t)
	sub, subConn := connect(t, b, "sub", 3600)
	b.Subscribe(sub, subConn, 1, []SubscriptionRequest{
		{Filter: "a/+", QoS: 1, Identifier: 7},
		{Filter: "a/#", QoS: 2, Identifier: 9},
		{Filter: "a/b", QoS: 0},
	})
	if got := subConn.next(t, packets.Suback).ReasonCodes; !slices.Equal(got, []byte{1, 2, 0}) {
		t.Fatalf("granted %v, want [1 2 0]", got)
	}
	pub, pubConn := connect(t, b, "pub", 0)
	for _, qos := range []byte{1, 2} {
		if err := b.Publish(pub, pubConn, &inflight.Message{Topic: "a/b", Payload: []byte("x"), QoS: qos}, uint16(qos), 100); err != nil {
			t.Fatal(err)
		}
		pk := subConn.next(t, packets.Publish)
		if pk.FixedHeader.Qos != qos || !slices.Equal(pk.Properties.SubscriptionIdentifier, []int{7, 9}) && !slices.Equal(pk.Properties.SubscriptionIdentifier, []int{9, 7}) {
			t.Fatalf("QoS %d, ids %v; want QoS %d with ids 7 and 9", pk.FixedHeader.Qos, pk.Properties.SubscriptionIdentifier, qos)
		}
		subConn.nothing(t)
	}
}

// [MQTT-3.8.3-3]: No Local keeps a client's own messages from it.
func TestNoLocal_MQTT_3_8_3_3(t *testing.T) {
	b := newTestBroker(t)
	s, c := connect(t, b, "self", 0)
	b.Subscribe(s, c, 1, []SubscriptionRequest{{Filter: "t", QoS: 1, NoLocal: true}})
	c.next(t, packets.Suback)
	if err := b.Publish(s, c, &inflight.Message{Topic: "t", Payload: []byte("x"), QoS: 1}, 1, 100); err != nil {
		t.Fatal(err)
	}
	if ack := c.next(t, packets.Puback); reason.Code(ack.ReasonCode) != reason.NoMatchingSubscribers {
		t.Fatalf("PUBACK 0x%02X, want 0x10 (no matching subscribers)", ack.ReasonCode)
	}
	c.nothing(t)
}

// A connection that lost its session to a takeover can no longer change it: its PUBLISH is
// ignored, and the new connection alone gets the session's traffic [MQTT-3.1.4-3].
func TestTakenOverConnectionCannotChangeSession(t *testing.T) {
	b := newTestBroker(t)
	s, old := connect(t, b, "dev", 3600)
	fresh := newFakeConn()
	done := make(chan error, 1)
	b.Connect(ConnectRequest{ClientID: "dev", ProtocolVersion: 5, ExpiryInterval: 3600}, fresh, func(present bool, err error) {
		if !present {
			t.Error("session not present after takeover")
		}
		done <- err
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !old.closed {
		t.Fatal("old connection not closed")
	}
	if err := b.Publish(s, old, &inflight.Message{Topic: "t", Payload: []byte("x"), QoS: 2}, 5, 100); err != nil {
		t.Fatal(err)
	}
	old.nothing(t)
	b.mu.Lock()
	inbound := s.inbound.Len()
	b.mu.Unlock()
	if inbound != 0 {
		t.Fatal("the taken-over connection added an inbound id")
	}
}

// A session's queue is bounded: with QueueFull DropNew, what does not fit is dropped and counted,
// and what fits is delivered in order when the session resumes [MQTT-4.6.0-6].
func TestQueueBoundedAndCounted(t *testing.T) {
	b := newTestBroker(t)
	b.opts.MaxQueued = 2
	b.opts.QueueFull = DropNew
	sub, subConn := connect(t, b, "sub", 3600)
	b.Subscribe(sub, subConn, 1, []SubscriptionRequest{{Filter: "q", QoS: 1}})
	subConn.next(t, packets.Suback)
	b.Disconnected(sub, subConn, false, nil)

	pub, pubConn := connect(t, b, "pub", 0)
	for i, payload := range []string{"one", "two", "three"} {
		if err := b.Publish(pub, pubConn, &inflight.Message{Topic: "q", Payload: []byte(payload), QoS: 1}, uint16(i+1), 100); err != nil {
			t.Fatal(err)
		}
		pubConn.next(t, packets.Puback)
	}
	if n := b.Metrics.QueueOverflow.Load(); n != 1 {
		t.Fatalf("QueueOverflow = %d, want 1", n)
	}

	again := newFakeConn()
	done := make(chan error, 1)
	b.Connect(ConnectRequest{ClientID: "sub", ProtocolVersion: 5, ExpiryInterval: 3600}, again, func(_ bool, err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two"} {
		if pk := again.next(t, packets.Publish); string(pk.Payload) != want {
			t.Fatalf("got %q, want %q", pk.Payload, want)
		}
	}
	again.nothing(t)
}
