package session

import (
	"slices"
	"testing"
)

// The durability rules of shared subscriptions (docs/ARCHITECTURE.md "Shared subscriptions"),
// checked by TestDurabilityRules like every other row.
func init() {
	durabilityRules = append(durabilityRules, sharedDurabilityRules...)
}

var sharedDurabilityRules = []durabilityRule{
	{
		// The message is in the group's record, naming the member and its id, and in the
		// member's outbound table, in the batch that also holds the publisher's inbound id.
		name: "SharedQoS2PublishMemberOnline_PubrecAfterGroupRecordAndMemberOutboundCommitted",
		arrange: func(h *harness) func() {
			m, mC := h.connect("m", 3600, 0)
			h.subscribe(m, mC, "$share/g/t", 2)
			pub, pubC := h.connect("pub", 3600, 0)
			return func() { h.publish(pub, pubC, "t", "x", 2, 7) }
		},
		batches: [][]string{{
			"put inbound pub 7 reason=0x00",
			"put message 1 t",
			"put outbound m 1 publish-sent qos=2 order=1 msg=1",
			"put shared g t 1 sent to m 1 qos=2 msg=1",
		}},
		after: []string{
			"commit #1",
			"pub <- PUBREC id=7 Success",
			"m <- PUBLISH id=1 qos=2 dup=false retain=false t x",
		},
	},
	{
		// No member online: the message waits in the group queue, committed before PUBREC.
		name: "SharedQoS2PublishNoMemberOnline_PubrecAfterGroupQueueRecordCommitted",
		arrange: func(h *harness) func() {
			m, mC := h.connect("m", 3600, 0)
			h.subscribe(m, mC, "$share/g/t", 2)
			h.b.Disconnected(m, mC, false, nil)
			pub, pubC := h.connect("pub", 3600, 0)
			return func() { h.publish(pub, pubC, "t", "x", 2, 7) }
		},
		batches: [][]string{{
			"put inbound pub 7 reason=0x00",
			"put message 1 t",
			"put shared g t 1 waiting msg=1",
		}},
		after: []string{"commit #1", "pub <- PUBREC id=7 Success"},
	},
	{
		// A member whose session lives in memory only writes no outbound entry: the group's
		// record is what keeps the message across a crash.
		name: "SharedQoS1PublishCleanMember_PubackAfterGroupRecordNamingTheMember",
		arrange: func(h *harness) func() {
			m, mC := h.connect("m", 0, 0)
			h.subscribe(m, mC, "$share/g/t", 1)
			pub, pubC := h.connect("pub", 3600, 0)
			return func() { h.publish(pub, pubC, "t", "x", 1, 7) }
		},
		batches: [][]string{{
			"put message 1 t",
			"put shared g t 1 sent to m 1 qos=1 msg=1",
		}},
		after: []string{
			"commit #1",
			"pub <- PUBACK id=7 Success",
			"m <- PUBLISH id=1 qos=1 dup=false retain=false t x",
		},
	},
	{
		// The session of a member ends with a QoS 1 message in flight: the message goes back to
		// the group queue in the batch that ends the session, and to another member in the next.
		name: "SharedQoS1MemberSessionEnds_BackToGroupThenToAnotherMemberAfterItsRecord",
		arrange: func(h *harness) func() {
			a, aC := h.connect("a", 0, 0)
			h.subscribe(a, aC, "$share/g/t", 1)
			h.publishLocal("t", "x", 1, false)
			h.settle()
			o, oC := h.connect("o", 3600, 0)
			h.subscribe(o, oC, "$share/g/t", 1)
			return func() { h.b.Disconnected(a, aC, true, nil) }
		},
		batches: [][]string{
			{"put shared g t 1 waiting msg=1"},
			{"put outbound o 1 publish-sent qos=1 order=1 msg=1", "put shared g t 1 sent to o 1 qos=1 msg=1"},
		},
		after: []string{
			"commit #1",
			"commit #2",
			"o <- PUBLISH id=1 qos=1 dup=false retain=false t x",
		},
	},
	{
		// [MQTT-4.8.2-5]: the session of a member ends with a QoS 2 message sent to it: the
		// group forgets it, and no other member is sent it.
		name: "SharedQoS2MemberSessionEnds_DroppedNotSentToAnotherMember_MQTT_4_8_2_5",
		arrange: func(h *harness) func() {
			a, aC := h.connect("a", 0, 0)
			h.subscribe(a, aC, "$share/g/t", 2)
			h.publishLocal("t", "x", 2, false)
			h.settle()
			o, oC := h.connect("o", 3600, 0)
			h.subscribe(o, oC, "$share/g/t", 2)
			return func() { h.b.Disconnected(a, aC, true, nil) }
		},
		batches: [][]string{{"delete message 1", "delete shared g t 1"}},
		after:   []string{"commit #1"},
	},
	{
		// [MQTT-4.8.2-6]: PUBREC 0x80 from the member discards the message for the group.
		name: "SharedPubrecFailureFromMember_GroupForgetsTheMessage_MQTT_4_8_2_6",
		arrange: func(h *harness) func() {
			m, mC := h.connect("m", 3600, 0)
			h.subscribe(m, mC, "$share/g/t", 2)
			h.publishLocal("t", "x", 2, false)
			h.settle()
			return func() { h.b.Pubrec(m, mC, 1, 0x80) }
		},
		batches: [][]string{{"delete message 1", "delete outbound m 1", "delete shared g t 1"}},
		after:   []string{"commit #1"},
	},
}

// Without any member online, QoS 0 to a group is dropped and counted.
func TestSharedQoS0NoMemberOnlineDropped(t *testing.T) {
	var drops []DropReason
	h := newHarness(t, Options{OnDrop: func(_, _ string, why DropReason) { drops = append(drops, why) }})
	m, mC := h.connect("m", 3600, 0)
	h.subscribe(m, mC, "$share/g/t", 1)
	h.b.Disconnected(m, mC, false, nil)
	h.settle()
	h.publishLocal("t", "x", 0, false)
	h.settle()
	if len(drops) != 1 || drops[0] != SharedNoMember || h.b.Metrics.SharedNoMember.Load() != 1 {
		t.Fatalf("drops %v, counted %d: want one %s", drops, h.b.Metrics.SharedNoMember.Load(), SharedNoMember)
	}
}

// QoS 0 needs no send quota: a member whose Receive Maximum is used up still gets it.
func TestSharedQoS0ToMemberAtItsReceiveMaximum(t *testing.T) {
	h := newHarness(t, Options{})
	m, mC := h.connect("m", 3600, 1)
	h.subscribe(m, mC, "$share/g/t", 1)
	h.publishLocal("t", "q1", 1, false)
	h.settle() // in flight: m's only slot
	h.publishLocal("t", "q0", 0, false)
	h.j.commit()
	got := h.rec.take()
	want := "m <- PUBLISH id=0 qos=0 dup=false retain=false t q0"
	if !slices.Contains(got, want) {
		t.Fatalf("events %q: want %q", got, want)
	}
	if n := h.b.Metrics.SharedNoMember.Load(); n != 0 {
		t.Errorf("SharedNoMember %d, want 0", n)
	}
}
