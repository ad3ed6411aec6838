package session

import (
	"github.com/oncemq/oncemq/inflight"
)

// completeOutbound frees id if it is in the expected state, then fills the freed slot. Acks for
// unknown ids, or in the wrong state, are ignored: after a resend they are normal. Takes b.mu.
func (b *Broker) completeOutbound(s *Session, c Conn, id uint16, state inflight.OutboundState, qos byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return
	}
	e, ok := s.outbound.Get(id)
	if !ok || e.State != state || e.QoS != qos {
		return
	}
	batch := &inflight.Batch{}
	var out outbox
	b.free(batch, s, id)
	b.fill(batch, s, &out)
	b.submitSends(batch, s, c, out)
}

// free removes an outbound entry, gives its send-quota slot back and drops its message reference.
// Caller holds b.mu.
func (b *Broker) free(batch *inflight.Batch, s *Session, id uint16) bool {
	e, ok := s.outbound.Remove(id)
	if !ok {
		return false
	}
	if s.unsent[id] {
		delete(s.unsent, id) // acknowledged before we resent it: it never used a slot
	} else if s.sent > 0 {
		s.sent--
	}
	if s.durable() {
		batch.DeleteOutbound(s.ClientID, id)
	}
	b.sharedAcked(batch, s, id)
	if e.Msg != nil {
		s.unhold(e.Msg)
	}
	s.release(batch, e.Msg)
	return true
}
