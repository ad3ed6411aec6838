package inflight

import (
	"errors"
	"fmt"
)

// Check reports every broken invariant of a recovered state, joined, or nil. Open's output always
// passes; tests run it after every reopen, and a tool can run it on a file it inspects.
//
// The invariants: packet ids are in 1..MaxPacketID and appear once per table; an outbound entry in
// "PUBREL sent" holds no message (it was released with the PUBREC) and one in "PUBLISH sent" does;
// every message an entry refers to is in Messages, under its own Seq, with its reference count equal
// to the number of entries referring to it.
func (r *Recovered) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	refs := make(map[uint64]int32)
	seen := make(map[string]bool)
	for _, s := range r.Sessions {
		c := s.Record.ClientID
		if !validName(c) {
			bad("session with client id %q", c)
		}
		if seen[c] {
			bad("client %q: two sessions", c)
		}
		seen[c] = true
		in := make(map[uint16]bool)
		for _, e := range s.Inbound {
			if e.PacketID == 0 {
				bad("client %q: inbound packet id 0", c)
			}
			if in[e.PacketID] {
				bad("client %q: inbound packet id %d twice", c, e.PacketID)
			}
			in[e.PacketID] = true
		}
		out := make(map[uint16]bool)
		for i, e := range s.Outbound {
			if e.PacketID == 0 {
				bad("client %q: outbound packet id 0", c)
			}
			if out[e.PacketID] {
				bad("client %q: outbound packet id %d twice", c, e.PacketID)
			}
			out[e.PacketID] = true
			if i > 0 && s.Outbound[i-1].Order > e.Order {
				bad("client %q: outbound not sorted by order at packet id %d", c, e.PacketID)
			}
			switch e.State {
			case PubrelSent:
				if e.MsgSeq != 0 {
					bad("client %q: outbound %d is PUBREL sent but holds message %d", c, e.PacketID, e.MsgSeq)
				}
			case PublishSent:
				if e.MsgSeq == 0 {
					bad("client %q: outbound %d is PUBLISH sent without a message", c, e.PacketID)
				}
			default:
				bad("client %q: outbound %d in state %d", c, e.PacketID, e.State)
			}
			if e.MsgSeq != 0 {
				refs[e.MsgSeq]++
			}
		}
		for i, q := range s.Queue {
			if i > 0 && s.Queue[i-1].Order >= q.Order {
				bad("client %q: queue not sorted by order at order %d", c, q.Order)
			}
			if q.MsgSeq == 0 {
				bad("client %q: queued %d without a message", c, q.Order)
			}
			refs[q.MsgSeq]++
		}
	}
	for seq, n := range refs {
		m := r.Messages[seq]
		if m == nil {
			bad("message %d is referred to %d times but missing", seq, n)
			continue
		}
		if got := m.refs.Load(); got != n {
			bad("message %d has %d references counted, %d entries refer to it", seq, got, n)
		}
	}
	for seq, m := range r.Messages {
		if m.Seq != seq {
			bad("message under %d has Seq %d", seq, m.Seq)
		}
		if refs[seq] == 0 {
			bad("message %d is not referred to", seq)
		}
	}
	return errors.Join(errs...)
}
