package session

import (
	"errors"
	"slices"
	"testing"

	"github.com/oncemq/oncemq/inflight"
)

// A local publish reaches every matching session, No Local included (no client published it),
// updates the retained message, and all of it is one batch; done runs after the commit, after the
// deliveries have been handed to their connections.
func TestPublishLocalRoutesToEveryMatchingSessionInOneBatch(t *testing.T) {
	h := newHarness(t, Options{})
	a, aC := h.connect("a", 3600, 0)
	h.b.Subscribe(a, aC, 1, []SubscriptionRequest{{Filter: "t/#", QoS: 1, NoLocal: true}})
	b, bC := h.connect("b", 0, 0)
	h.subscribe(b, bC, "t/x", 0)
	h.settle()

	h.publishLocal("t/x", "m", 1, true)
	h.expectEvents("before the commit", "submit #1")
	wantRecords := [][]string{{"put message 1 t/x", "put outbound a 1 publish-sent qos=1 order=1 msg=1", "put retained t/x"}}
	if got := h.j.records(); !slices.EqualFunc(got, wantRecords, slices.Equal) {
		t.Errorf("batches %q, want %q", got, wantRecords)
	}
	h.j.commit()
	got := h.rec.take()
	if len(got) != 4 || got[0] != "commit #1" || got[3] != "local <- done: <nil>" {
		t.Fatalf("after the commit: %q", got)
	}
	deliveries := slices.Sorted(slices.Values(got[1:3])) // sessions are visited in any order
	want := []string{"a <- PUBLISH id=1 qos=1 dup=false retain=false t/x m", "b <- PUBLISH id=0 qos=0 dup=false retain=false t/x m"}
	if !slices.Equal(deliveries, want) {
		t.Errorf("deliveries %q, want %q", deliveries, want)
	}

	// The retained message is there for a new subscriber [MQTT-3.3.1-9].
	c, cC := h.connect("c", 0, 0)
	h.b.Subscribe(c, cC, 2, []SubscriptionRequest{{Filter: "t/+", QoS: 2}})
	h.commitExpect("subscribe after the local publish", "submit #1", "commit #1", "c <- SUBACK id=2 [2]",
		"c <- PUBLISH id=1 qos=1 dup=false retain=true t/x m")
}

// Once the journal has failed, a local publish routes nothing and done gets the failure.
func TestPublishLocalAfterJournalFailedRoutesNothing(t *testing.T) {
	h := newHarness(t, Options{})
	sub, subC := h.connect("sub", 3600, 0)
	h.subscribe(sub, subC, "t", 1)
	h.j.fail(errors.New("disk gone"))

	h.publishLocal("t", "m", 1, true)
	h.commitExpect("local publish on a failed journal", "submit #1", "fail #1", "local <- done: disk gone")
	if st := h.b.Stats(); st.OutboundInFlight != 0 || st.Queued != 0 || st.Retained != 0 {
		t.Errorf("after a refused local publish: %+v", st)
	}
}

// A commit that fails under a local publish sends no delivery and gives done the error.
func TestPublishLocalCommitFailure(t *testing.T) {
	h := newHarness(t, Options{})
	sub, subC := h.connect("sub", 3600, 0)
	h.subscribe(sub, subC, "t", 1)

	h.publishLocal("t", "m", 1, false)
	h.j.fail(errors.New("disk gone"))
	h.commitExpect("failed commit", "submit #1", "fail #1", "local <- done: disk gone")
	if n := h.b.Metrics.CommitFailures.Load(); n != 1 {
		t.Errorf("CommitFailures = %d, want 1", n)
	}
}

func TestPublishLocalInvalidMessage(t *testing.T) {
	h := newHarness(t, Options{})
	sub, subC := h.connect("sub", 3600, 0)
	h.subscribe(sub, subC, "#", 2)
	for _, m := range []*inflight.Message{
		{Topic: "a/+", QoS: 1},
		{Topic: "", QoS: 0},
		{Topic: "a", QoS: 3},
	} {
		var got error
		h.b.PublishLocal(m, func(err error) { got = err })
		h.j.commit()
		if !errors.Is(got, ErrInvalidMessage) {
			t.Errorf("topic %q QoS %d: done(%v), want ErrInvalidMessage", m.Topic, m.QoS, got)
		}
	}
	h.expectEvents("invalid local publishes", "submit #1", "commit #1", "submit #2", "commit #2", "submit #3", "commit #3")
}
