package inflight

import (
	"errors"
	"fmt"
)

// Check reports every broken invariant of a recovered state, joined, or nil. Open's output always
// passes; the tests, and every integration test's cleanup, run it after every reopen.
//
// The invariants: packet ids are in 1..maxPacketID and appear once per table; an outbound entry in
// "PUBREL sent" holds no message (it was released with the PUBREC) and one in "PUBLISH sent" does;
// every message an entry refers to is in Messages, in sequence order, with its reference count equal
// to the number of entries referring to it.
func (r *Recovered) Check() error {
	c := &checker{refs: make(map[uint64]int32)}
	seen := make(map[string]bool)
	for i := range r.Sessions {
		id := r.Sessions[i].Record.ClientID
		if seen[id] {
			c.bad("client %q: two sessions", id)
		}
		seen[id] = true
		c.session(&r.Sessions[i])
	}
	c.checkShared(r.Shared)
	c.messages(r.Messages)
	return errors.Join(c.errs...)
}

// checker collects the broken invariants of one recovered state.
type checker struct {
	errs []error
	refs map[uint64]int32 // references to each message seen in the entries
}

func (c *checker) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// idTable returns a function that checks each packet id of one direction of client id's tables:
// never 0, never twice.
func (c *checker) idTable(id, direction string) func(packetID uint16) {
	seen := make(map[uint16]bool)
	return func(packetID uint16) {
		if packetID == 0 {
			c.bad("client %q: %s packet id 0", id, direction)
		}
		if seen[packetID] {
			c.bad("client %q: %s packet id %d twice", id, direction, packetID)
		}
		seen[packetID] = true
	}
}

// session checks one session's tables and counts its message references.
func (c *checker) session(s *RecoveredSession) {
	id := s.Record.ClientID
	if !validName(id) {
		c.bad("session with client id %q", id)
	}
	inbound := c.idTable(id, "inbound")
	for _, e := range s.Inbound {
		inbound(e.PacketID)
	}
	outbound := c.idTable(id, "outbound")
	for i, e := range s.Outbound {
		outbound(e.PacketID)
		if i > 0 && s.Outbound[i-1].Order > e.Order {
			c.bad("client %q: outbound not sorted by order at packet id %d", id, e.PacketID)
		}
		c.outboundState(id, e)
	}
	for i, q := range s.Queue {
		if i > 0 && s.Queue[i-1].Order >= q.Order {
			c.bad("client %q: queue not sorted by order at order %d", id, q.Order)
		}
		if q.MsgSeq == 0 {
			c.bad("client %q: queued %d without a message", id, q.Order)
		}
		c.refs[q.MsgSeq]++
	}
}

// outboundState checks that an outbound entry holds a message exactly while it is "PUBLISH sent".
func (c *checker) outboundState(id string, e OutboundRecord) {
	switch e.State {
	case PubrelSent:
		if e.MsgSeq != 0 {
			c.bad("client %q: outbound %d is PUBREL sent but holds message %d", id, e.PacketID, e.MsgSeq)
		}
	case PublishSent:
		if e.MsgSeq == 0 {
			c.bad("client %q: outbound %d is PUBLISH sent without a message", id, e.PacketID)
		}
	default:
		c.bad("client %q: outbound %d in state %d", id, e.PacketID, e.State)
	}
	if e.MsgSeq != 0 {
		c.refs[e.MsgSeq]++
	}
}

// messages checks that the referenced messages are there with the right counts, and only they.
func (c *checker) messages(msgs Messages) {
	for seq, n := range c.refs {
		m := msgs.Get(seq)
		if m == nil {
			c.bad("message %d is referred to %d times but missing", seq, n)
			continue
		}
		if got := m.refs.Load(); got != n {
			c.bad("message %d has %d references counted, %d entries refer to it", seq, got, n)
		}
	}
	for i, m := range msgs {
		if i > 0 && msgs[i-1].Seq >= m.Seq {
			c.bad("message %d after message %d: not in sequence order", m.Seq, msgs[i-1].Seq)
		}
		if c.refs[m.Seq] == 0 {
			c.bad("message %d is not referred to", m.Seq)
		}
	}
}
