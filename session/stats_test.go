package session

import (
	"reflect"
	"testing"

	"github.com/oncemq/oncemq/session/reason"
)

func TestStats(t *testing.T) {
	h := newHarness(t, Options{MayRead: func(clientID, _, _ string) bool { return clientID != "nosy" }})
	if st := h.b.Stats(); !reflect.DeepEqual(st, Stats{}) {
		t.Errorf("empty broker: %+v", st)
	}

	on, onC := h.connect("on", 3600, 1)
	h.subscribe(on, onC, "t", 2)
	off, offC := h.connect("off", 3600, 0)
	h.subscribe(off, offC, "t", 1)
	h.b.Disconnected(off, offC, false, nil)
	nosy, nosyC := h.connect("nosy", 0, 0)
	h.subscribe(nosy, nosyC, "t", 1)
	h.publish(nosy, nosyC, "t", "m1", 2, 1) // awaits PUBREL; in flight to on, queued for off
	h.publish(nosy, nosyC, "t", "m2", 2, 2) // queued for on (Receive Maximum 1) and off
	h.publishLocal("r", "kept", 0, true)
	h.b.Subscribe(nosy, nosyC, 2, []SubscriptionRequest{{Filter: "x", Refused: reason.NotAuthorized}})
	h.settle()

	want := Stats{
		Sessions:              3,
		SessionsOnline:        2,
		InboundAwaitingPubrel: 2,
		OutboundInFlight:      1,
		Queued:                3,
		Subscriptions:         3,
		Retained:              1,
		NotAuthorized:         2,
		RetainedBytes:         int64(len("r") + len("kept")),
		QueuedBytes:           4 * int64(len("t")+len("m1")), // m1 in flight to on, m2 queued for on, both queued for off
	}
	if st := h.b.Stats(); !reflect.DeepEqual(st, want) {
		t.Errorf("Stats\n got %+v\nwant %+v", st, want)
	}
}
