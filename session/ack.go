package session

import (
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/inflight"
)

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
	s.release(batch, e.Msg)
	return true
}

// Puback handles a PUBACK from the client: a QoS 1 delivery is complete, its id is freed and the
// slot goes to the next waiting message [MQTT-4.3.2-5].
func (b *Broker) Puback(s *Session, c Conn, id uint16) {
	b.completeOutbound(s, c, id, inflight.PublishSent, 1)
}

// Pubcomp handles a PUBCOMP: a QoS 2 delivery is complete and its id is freed [MQTT-4.3.3-6].
func (b *Broker) Pubcomp(s *Session, c Conn, id uint16) {
	b.completeOutbound(s, c, id, inflight.PubrelSent, 2)
}

// completeOutbound frees id if it is in the expected state, then fills the freed slot. Acks for
// unknown ids, or in the wrong state, are ignored: after a resend they are normal.
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

// Pubrec handles a PUBREC from the client. Below 0x80: the entry moves to "PUBREL sent", which is
// committed before PUBREL goes out [MQTT-4.3.3-4]; the message itself is released
// [MQTT-4.3.3-5]. From 0x80: the delivery is over and the id freed [MQTT-4.3.3-9]. A PUBREC for an
// id already in "PUBREL sent" gets PUBREL again; for an unknown id, PUBREL 0x92 in 5.0.
func (b *Broker) Pubrec(s *Session, c Conn, id uint16, reason byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return
	}
	batch := &inflight.Batch{}
	var out outbox
	e, ok := s.outbound.Get(id)
	switch {
	case !ok || e.QoS != 2:
		if s.ProtocolVersion == 5 {
			out.add(c, ack(packets.Pubrel, id, codePacketIDNotFound))
		} else {
			out.add(c, ack(packets.Pubrel, id, codeSuccess))
		}
	case reason >= 0x80:
		b.free(batch, s, id)
		b.fill(batch, s, &out)
	case e.State == inflight.PubrelSent:
		out.add(c, ack(packets.Pubrel, id, codeSuccess))
	default:
		if s.unsent[id] { // PUBREC for a PUBLISH the previous connection sent
			delete(s.unsent, id)
			s.sent++
		}
		e.State = inflight.PubrelSent
		m := e.Msg
		e.Msg, e.MsgSeq = nil, 0
		if s.durable() {
			batch.PutOutbound(s.ClientID, e.OutboundRecord)
		}
		s.release(batch, m)
		out.add(c, ack(packets.Pubrel, id, codeSuccess))
	}
	b.submitSends(batch, s, c, out)
}

// submitSends commits batch and then sends out. Caller holds b.mu.
func (b *Broker) submitSends(batch *inflight.Batch, s *Session, c Conn, out outbox) {
	if batch.Len() == 0 && len(out) == 0 {
		return
	}
	b.submit(batch, func(err error) {
		if err != nil {
			c.Close(codeUnspecified)
			return
		}
		out.flush()
	})
}
