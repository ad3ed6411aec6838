package session

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// durabilityRule is one row of the durability rules (docs/ARCHITECTURE.md, "Durability rules"):
// an event, what must be committed first, and what may be sent then.
type durabilityRule struct {
	name string
	// arrange builds the state the event needs (everything it does is committed) and returns the
	// event.
	arrange func(h *harness) (event func())
	// batches are the records of every batch the event submits, in submission order; the order of
	// records inside one batch does not matter.
	batches [][]string
	// after is everything that happens once those batches are committed, in order: "commit #n"
	// before the packets that batch n allows.
	after []string
}

var durabilityRules = []durabilityRule{
	{
		name: "QoS2PublishNewID_PubrecAfterInboundIDFanOutAndRetainedAreCommitted",
		arrange: func(h *harness) func() {
			sub, subC := h.connect("sub", 3600, 0)
			h.subscribe(sub, subC, "t", 2)
			off, offC := h.connect("off", 3600, 0)
			h.subscribe(off, offC, "t", 1)
			h.b.Disconnected(off, offC, false, nil)
			pub, pubC := h.connect("pub", 3600, 0)
			return func() {
				h.b.Publish(pub, pubC, retained("t", "m", 2), 7, 100)
			}
		},
		batches: [][]string{{
			"put inbound pub 7 reason=0x00",
			"put message 1 t",
			"put outbound sub 1 publish-sent qos=2 order=1 msg=1",
			"put queued off order=1 qos=1 msg=1",
			"put retained t",
		}},
		after: []string{
			"commit #1",
			"pub <- PUBREC id=7 Success",
			"sub <- PUBLISH id=1 qos=2 dup=false retain=false t m",
		},
	},
	{
		// The first PUBREC said "no matching subscribers"; a subscriber that appears before the
		// resend gets nothing, and the resend is answered the same, after the first commit.
		name: "QoS2PublishIDInTable_PubrecAgainSameCodeNoRoutingAfterEarlierCommits_MQTT_4_3_3_10",
		arrange: func(h *harness) func() {
			pub, pubC := h.connect("pub", 3600, 0)
			sub, subC := h.connect("sub", 3600, 0)
			return func() {
				h.publish(pub, pubC, "t", "m", 2, 7)
				h.b.Subscribe(sub, subC, 1, []SubscriptionRequest{{Filter: "t", QoS: 2}})
				h.publish(pub, pubC, "t", "m", 2, 7) // the client's resend, DUP=1
			}
		},
		batches: [][]string{{"put inbound pub 7 reason=0x10"}, {"put subscription sub t qos=2"}, {}},
		after: []string{
			"commit #1",
			"pub <- PUBREC id=7 No matching subscribers",
			"commit #2",
			"sub <- SUBACK id=1 [2]",
			"commit #3",
			"pub <- PUBREC id=7 No matching subscribers",
		},
	},
	{
		name: "PubrelFromClient_PubcompAfterInboundIDRemovalIsCommitted_MQTT_4_3_3_11",
		arrange: func(h *harness) func() {
			pub, pubC := h.connect("pub", 3600, 0)
			h.publish(pub, pubC, "t", "m", 2, 7)
			return func() { h.b.Pubrel(pub, pubC, 7) }
		},
		batches: [][]string{{"delete inbound pub 7"}},
		after:   []string{"commit #1", "pub <- PUBCOMP id=7 Success"},
	},
	{
		name: "PubrelUnknownID_Pubcomp0x92AfterEarlierCommits",
		arrange: func(h *harness) func() {
			pub, pubC := h.connect("pub", 3600, 0)
			return func() { h.b.Pubrel(pub, pubC, 9) }
		},
		batches: [][]string{{}},
		after:   []string{"commit #1", "pub <- PUBCOMP id=9 Packet Identifier not found"},
	},
	{
		name: "QoS1Publish_PubackAfterMessageQueuedForEveryMatchingDurableSession_MQTT_4_3_2_4",
		arrange: func(h *harness) func() {
			off, offC := h.connect("off", 3600, 0)
			h.subscribe(off, offC, "t", 1)
			h.b.Disconnected(off, offC, false, nil)
			pub, pubC := h.connect("pub", 0, 0)
			return func() { h.publish(pub, pubC, "t", "m", 1, 3) }
		},
		batches: [][]string{{"put message 1 t", "put queued off order=1 qos=1 msg=1"}},
		after:   []string{"commit #1", "pub <- PUBACK id=3 Success"},
	},
	{
		// The dedup id is committed in the batch of the fan-out: after a crash, both or neither.
		name: "QoS1PublishWithDedupID_PubackAfterIDAndFanOutCommittedInOneBatch",
		arrange: func(h *harness) func() {
			off, offC := h.connect("off", 3600, 0)
			h.subscribe(off, offC, "t", 1)
			h.b.Disconnected(off, offC, false, nil)
			pub, pubC := h.connect("pub", 0, 0)
			return func() { h.publishDedup(pub, pubC, "t", "m", 1, 3, "r1") }
		},
		batches: [][]string{{"put dedup c/pub/r1 reason=0x00", "put message 1 t", "put queued off order=1 qos=1 msg=1"}},
		after:   []string{"commit #1", "pub <- PUBACK id=3 Success"},
	},
	{
		// A copy under a new packet id (a publisher that lost its state) is answered with the
		// first copy's code after the first copy's commit, says it is a duplicate, routes nothing,
		// and its id awaits PUBREL like any other.
		name: "QoS2DuplicateByDedupIDNewPacketID_PubrecFirstCodeAfterFirstCommitInboundIDNoRouting",
		arrange: func(h *harness) func() {
			sub, subC := h.connect("sub", 3600, 0)
			h.subscribe(sub, subC, "t", 2)
			pub, pubC := h.connect("pub", 3600, 0)
			return func() {
				h.publishDedup(pub, pubC, "t", "m", 2, 7, "r1")
				h.publishDedup(pub, pubC, "t", "m", 2, 8, "r1")
			}
		},
		batches: [][]string{
			{"put dedup c/pub/r1 reason=0x00", "put inbound pub 7 reason=0x00", "put message 1 t",
				"put outbound sub 1 publish-sent qos=2 order=1 msg=1"},
			{"put inbound pub 8 reason=0x00"},
		},
		after: []string{
			"commit #1",
			"pub <- PUBREC id=7 Success",
			"sub <- PUBLISH id=1 qos=2 dup=false retain=false t m",
			"commit #2",
			"pub <- PUBREC id=8 Success dedup=duplicate",
		},
	},
	{
		name: "DeliveryQoS1_PublishAfterOutboundIDAndMessageAreRecorded",
		arrange: func(h *harness) func() {
			sub, subC := h.connect("sub", 3600, 0)
			h.subscribe(sub, subC, "t", 1)
			return func() { h.publishLocal("t", "m", 1, false) }
		},
		batches: [][]string{{"put message 1 t", "put outbound sub 1 publish-sent qos=1 order=1 msg=1"}},
		after: []string{
			"commit #1",
			"sub <- PUBLISH id=1 qos=1 dup=false retain=false t m",
			"local <- done: <nil>",
		},
	},
	{
		name: "DeliveryQoS2_PublishAfterOutboundIDAndMessageAreRecorded",
		arrange: func(h *harness) func() {
			sub, subC := h.connect("sub", 3600, 0)
			h.subscribe(sub, subC, "t", 2)
			return func() { h.publishLocal("t", "m", 2, false) }
		},
		batches: [][]string{{"put message 1 t", "put outbound sub 1 publish-sent qos=2 order=1 msg=1"}},
		after: []string{
			"commit #1",
			"sub <- PUBLISH id=1 qos=2 dup=false retain=false t m",
			"local <- done: <nil>",
		},
	},
	{
		name: "PubrecBelow0x80FromSubscriber_PubrelAfterPubrelSentIsCommitted_MQTT_4_3_3_4",
		arrange: func(h *harness) func() {
			sub, subC := deliveredQoS2(h)
			return func() { h.b.Pubrec(sub, subC, 1, reason.Success) }
		},
		batches: [][]string{{"put outbound sub 1 pubrel-sent qos=2 order=1", "delete message 1"}},
		after:   []string{"commit #1", "sub <- PUBREL id=1 Success"},
	},
	{
		name: "PubrecFrom0x80FromSubscriber_FreesTheIDSendsNothing",
		arrange: func(h *harness) func() {
			sub, subC := deliveredQoS2(h)
			return func() { h.b.Pubrec(sub, subC, 1, reason.QuotaExceeded) }
		},
		batches: [][]string{{"delete outbound sub 1", "delete message 1"}},
		after:   []string{"commit #1"},
	},
	{
		// The freed slot goes to the next queued message, whose PUBLISH waits for its own record.
		name: "PubackFromSubscriber_FreesTheID_NextQueuedPublishAfterItsRecord",
		arrange: func(h *harness) func() {
			sub, subC := h.connect("sub", 3600, 1)
			h.subscribe(sub, subC, "t", 1)
			h.publishLocal("t", "m1", 1, false)
			h.publishLocal("t", "m2", 1, false) // beyond Receive Maximum 1: queued
			return func() { h.b.Puback(sub, subC, 1) }
		},
		batches: [][]string{{
			"delete outbound sub 1",
			"delete message 1",
			"delete queued sub order=2",
			"put outbound sub 2 publish-sent qos=1 order=2 msg=2",
		}},
		after: []string{"commit #1", "sub <- PUBLISH id=2 qos=1 dup=false retain=false t m2"},
	},
	{
		name: "PubcompFromSubscriber_FreesTheIDSendsNothing",
		arrange: func(h *harness) func() {
			sub, subC := deliveredQoS2(h)
			h.b.Pubrec(sub, subC, 1, reason.Success)
			return func() { h.b.Pubcomp(sub, subC, 1) }
		},
		batches: [][]string{{"delete outbound sub 1"}},
		after:   []string{"commit #1"},
	},
	{
		// Unacknowledged PUBLISHes again with DUP=1 and their ids, the PUBREL again, in their
		// original order, then the queue within the client's Receive Maximum (4: one queued
		// message fits, the other waits) [MQTT-4.4.0-1] [MQTT-3.3.1-1].
		name: "SessionResumed_UnackedPublishDupSameIDAndPubrelInOrderThenQueuedWithinReceiveMaximum",
		arrange: func(h *harness) func() {
			sub, subC := h.connect("sub", 3600, 0)
			h.subscribe(sub, subC, "t", 2)
			h.publishLocal("t", "m1", 2, false)
			h.publishLocal("t", "m2", 2, false)
			h.publishLocal("t", "m3", 2, false)
			h.settle()
			h.b.Pubrec(sub, subC, 2, reason.Success)
			h.settle()
			h.b.Disconnected(sub, subC, false, nil)
			h.settle()
			h.publishLocal("t", "m4", 2, false)
			h.publishLocal("t", "m5", 2, false)
			return func() {
				again := &recConn{name: "sub", rec: h.rec}
				h.b.Connect(ConnectRequest{ClientID: "sub", ProtocolVersion: 5, ExpiryInterval: 3600, ReceiveMax: 4}, again,
					func(present bool, err error) { h.rec.add("sub <- CONNACK present=%t err=%v", present, err) })
			}
		},
		batches: [][]string{{
			`put session sub expiry=3600 will=false owner=""`,
			"delete queued sub order=4",
			"put outbound sub 4 publish-sent qos=2 order=4 msg=4",
		}},
		after: []string{
			"commit #1",
			"sub <- CONNACK present=true err=<nil>",
			"sub <- PUBLISH id=1 qos=2 dup=true retain=false t m1",
			"sub <- PUBREL id=2 Success",
			"sub <- PUBLISH id=3 qos=2 dup=true retain=false t m3",
			"sub <- PUBLISH id=4 qos=2 dup=false retain=false t m4",
		},
	},
}

// TestDurabilityRules checks every row of the durability rules: no packet goes out before the
// commit that holds what it promises, each goes out after it, and the committed batches hold
// exactly the promised records.
func TestDurabilityRules(t *testing.T) {
	for _, rule := range durabilityRules {
		t.Run(rule.name, func(t *testing.T) {
			h := newHarness(t, Options{Dedup: testDedup})
			event := rule.arrange(h)
			h.settle()

			event()
			for _, e := range h.rec.take() {
				if !strings.HasPrefix(e, "submit #") {
					t.Errorf("%q before any commit: it must wait for the commit of what it promises", e)
				}
			}
			want := make([][]string, len(rule.batches))
			for i, b := range rule.batches {
				want[i] = slices.Clone(b)
				sort.Strings(want[i])
			}
			if got := h.j.records(); !reflect.DeepEqual(got, want) {
				t.Errorf("batches submitted:\n got %q\nwant %q", got, want)
			}

			h.j.commit()
			h.expectEvents("after the commit", rule.after...)
		})
	}
}

// testDedup turns dedup on in the session tests, with the property dedup-id.
var testDedup = DedupOptions{Property: "dedup-id", Window: time.Minute, Max: 1000}

// retained is a message published with the retain flag.
func retained(topic, payload string, qos byte) *inflight.Message {
	return &inflight.Message{Topic: topic, Payload: []byte(payload), QoS: qos, Retain: true}
}

// deliveredQoS2 connects "sub", subscribes it to "t" at QoS 2 and delivers one message to it,
// in flight under id 1.
func deliveredQoS2(h *harness) (*Session, *recConn) {
	sub, subC := h.connect("sub", 3600, 0)
	h.subscribe(sub, subC, "t", 2)
	h.publishLocal("t", "m", 2, false)
	h.settle()
	return sub, subC
}
