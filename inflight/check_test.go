package inflight

import (
	"strings"
	"testing"
)

// check finds every kind of broken invariant, each named, and passes a sound state.
func TestCheckReportsEveryBrokenInvariant(t *testing.T) {
	counted := func(seq uint64, refs int32) *Handle {
		h := &Handle{Seq: seq, Topic: 1}
		h.refs.Store(refs)
		return h
	}
	sound := &Recovered{
		Sessions: []RecoveredSession{{
			Record:   SessionRecord{ClientID: "c"},
			Inbound:  []InboundRecord{{PacketID: 1}},
			Outbound: []OutboundRecord{{PacketID: 1, State: PublishSent, Order: 1, MsgSeq: 5}, {PacketID: 2, State: PubrelSent, Order: 2}},
			Queue:    []QueuedRecord{{Order: 3, MsgSeq: 5}},
		}},
		Messages: Messages{counted(5, 2)},
	}
	if err := sound.Check(); err != nil {
		t.Fatalf("sound state: %v", err)
	}

	broken := &Recovered{
		Sessions: []RecoveredSession{
			{
				Record:  SessionRecord{ClientID: "c"},
				Inbound: []InboundRecord{{PacketID: 0}, {PacketID: 4}, {PacketID: 4}},
				Outbound: []OutboundRecord{
					{PacketID: 0, State: PublishSent, Order: 5, MsgSeq: 5},
					{PacketID: 3, State: PubrelSent, Order: 4, MsgSeq: 5},
					{PacketID: 3, State: PublishSent, Order: 6},
					{PacketID: 7, State: 9, Order: 7},
				},
				Queue: []QueuedRecord{{Order: 9, MsgSeq: 6}, {Order: 9}},
			},
			{Record: SessionRecord{ClientID: "c"}},
			{Record: SessionRecord{ClientID: ""}},
		},
		Messages: Messages{counted(5, 1), counted(9, 0), counted(8, 0)},
	}
	err := broken.Check()
	if err == nil {
		t.Fatal("broken state passes")
	}
	for _, want := range []string{
		`client "c": two sessions`,
		`session with client id ""`,
		`client "c": inbound packet id 0`,
		`client "c": inbound packet id 4 twice`,
		`client "c": outbound packet id 0`,
		`client "c": outbound packet id 3 twice`,
		`client "c": outbound not sorted by order at packet id 3`,
		`client "c": outbound 3 is PUBREL sent but holds message 5`,
		`client "c": outbound 3 is PUBLISH sent without a message`,
		`client "c": outbound 7 in state 9`,
		`client "c": queue not sorted by order at order 9`,
		`client "c": queued 9 without a message`,
		`message 6 is referred to 1 times but missing`,
		`message 5 has 1 references counted, 2 entries refer to it`,
		`message 8 after message 9: not in sequence order`,
		`message 8 is not referred to`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check does not report %q", want)
		}
	}
}
