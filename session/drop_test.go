package session

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// clock is an Options.Now a test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Every drop is counted and told to Options.OnDrop, under Broker.mu, with the session, the topic
// and the reason.
func TestOnDrop(t *testing.T) {
	var (
		b     *Broker
		mu    sync.Mutex
		drops []string
	)
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	h := newHarness(t, Options{MaxQueued: 1, QueueFull: DropNew, Now: clk.Now, OnDrop: func(clientID, topic string, why DropReason) {
		if b.mu.TryLock() {
			b.mu.Unlock()
			t.Error("OnDrop called without Broker.mu held")
		}
		mu.Lock()
		defer mu.Unlock()
		drops = append(drops, fmt.Sprintf("%s %s %s", clientID, topic, why))
	}})
	b = h.b

	// Queue full: the second message for an offline session does not fit (Options.MaxQueued 1).
	off, offC := h.connect("off", 3600, 0)
	h.subscribe(off, offC, "q", 1)
	h.b.Disconnected(off, offC, false, nil)
	h.publishLocal("q", "fits", 1, false)
	h.publishLocal("q", "dropped", 1, false)
	h.settle()

	// Expired: the queued message's Message Expiry passes while the session is offline
	// [MQTT-3.3.2-5].
	exp, expC := h.connect("exp", 3600, 0)
	h.subscribe(exp, expC, "e", 1)
	h.b.Disconnected(exp, expC, false, nil)
	m := &inflight.Message{Topic: "e", Payload: []byte("soon gone"), QoS: 1}
	m.Properties.MessageExpiryInterval = 1
	h.b.PublishLocal(m, nil)
	h.settle()
	clk.advance(2 * time.Second)
	h.connectAs(ConnectRequest{ClientID: "exp", ProtocolVersion: 5, ExpiryInterval: 3600})

	// Too large for the client's Maximum Packet Size [MQTT-3.1.2-25].
	small, smallC := h.connectAs(ConnectRequest{ClientID: "small", ProtocolVersion: 5, CleanStart: true, MaxPacketSize: 20})
	h.subscribe(small, smallC, "big", 0)
	h.publishLocal("big", strings.Repeat("x", 100), 0, false)
	h.settle()

	want := []string{"off q queue-full", "exp e expired", "small big too-large"}
	mu.Lock()
	got := slices.Clone(drops)
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("OnDrop told %q, want %q", got, want)
	}
	st := h.b.Stats()
	if st.QueueOverflow != 1 || st.Expired != 1 || st.TooLarge != 1 {
		t.Errorf("Stats %+v: want one drop of each kind", st)
	}
}
