package session

import (
	"slices"
	"testing"

	"github.com/oncemq/oncemq/inflight"
)

func volatileMsg(topic, payload string) *inflight.Message {
	return &inflight.Message{Topic: topic, Payload: []byte(payload), QoS: 2}
}

// A volatile message reaches a connected subscriber at once, at QoS 0 (a live delivery: retain flag
// clear [MQTT-3.3.1-12]), and
// nothing is submitted to the journal: no batch, no commit, not even an empty one.
func TestPublishVolatileSendsWithoutJournal(t *testing.T) {
	h := newHarness(t, Options{})
	s, c := h.connect("watcher", 3600, 0)
	h.subscribe(s, c, "$SYS/#", 2)
	all, allC := h.connect("all", 3600, 0)
	h.subscribe(all, allC, "#", 2)
	off, offC := h.connect("offline", 3600, 0)
	h.subscribe(off, offC, "$SYS/broker/+", 1)
	h.b.Disconnected(off, offC, false, nil)
	h.settle()

	h.b.PublishVolatile([]*inflight.Message{volatileMsg("$SYS/broker/uptime", "5 seconds")})
	// "#" does not match a name starting with '$' [MQTT-4.7.2-1]; the offline session queues nothing.
	h.expectEvents("volatile publish", "watcher <- PUBLISH id=0 qos=0 dup=false retain=false $SYS/broker/uptime 5 seconds")
	if got := h.j.records(); len(got) != 0 {
		t.Fatalf("journal got batches %q, want none", got)
	}
	if st := h.b.Stats(); st.Queued != 0 || st.Retained != 0 {
		t.Errorf("stats after a volatile publish: queued %d retained %d, want 0 0", st.Queued, st.Retained)
	}
}

// A new subscriber gets the latest volatile value at once, after its SUBACK, as a retained message
// [MQTT-3.3.1-9], and the subscription's batch holds the subscription only.
func TestPublishVolatileRetainedForNewSubscriber(t *testing.T) {
	h := newHarness(t, Options{})
	h.b.PublishVolatile([]*inflight.Message{volatileMsg("$SYS/broker/clients/connected", "1")})
	h.b.PublishVolatile([]*inflight.Message{volatileMsg("$SYS/broker/clients/connected", "2")})
	s, c := h.connect("late", 3600, 0)
	h.b.Subscribe(s, c, 7, []SubscriptionRequest{{Filter: "$SYS/broker/clients/+", QoS: 1}})
	want := [][]string{{"put subscription late $SYS/broker/clients/+ qos=1"}}
	if got := h.j.records(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("subscribe batch %q, want %q", got, want)
	}
	h.commitExpect("subscribe", "submit #1", "commit #1", "late <- SUBACK id=7 [1]",
		"late <- PUBLISH id=0 qos=0 dup=false retain=true $SYS/broker/clients/connected 2")
}

// Options.MayRead decides who reads a volatile message, live and retained, like any message.
func TestPublishVolatileSubjectToMayRead(t *testing.T) {
	h := newHarness(t, Options{MayRead: func(clientID, _, _ string) bool { return clientID == "admin" }})
	u, uC := h.connect("user", 0, 0)
	h.subscribe(u, uC, "$SYS/#", 0)
	a, aC := h.connect("admin", 0, 0)
	h.subscribe(a, aC, "$SYS/#", 0)
	h.b.PublishVolatile([]*inflight.Message{volatileMsg("$SYS/broker/version", "v")})
	h.expectEvents("live", "admin <- PUBLISH id=0 qos=0 dup=false retain=false $SYS/broker/version v")
	u2, u2C := h.connect("user2", 0, 0)
	h.b.Subscribe(u2, u2C, 3, []SubscriptionRequest{{Filter: "$SYS/#"}})
	h.commitExpect("retained refused", "submit #1", "commit #1", "user2 <- SUBACK id=3 [0]")
}
