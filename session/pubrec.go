package session

import (
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// Pubrec handles a PUBREC from the client. Below 0x80: the entry moves to "PUBREL sent", which is
// committed before PUBREL goes out [MQTT-4.3.3-4]; the message itself is released
// [MQTT-4.3.3-5]. From 0x80: the delivery is over and the id freed [MQTT-4.3.3-9]. A PUBREC for an
// id already in "PUBREL sent" gets PUBREL again; for an unknown id, PUBREL 0x92 in 5.0.
func (b *Broker) Pubrec(s *Session, c Conn, id uint16, code reason.Code) {
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
		if s.protocolVersion == 5 {
			out.add(c, ack(packets.Pubrel, id, reason.PacketIdentifierNotFound))
		} else {
			out.add(c, ack(packets.Pubrel, id, reason.Success))
		}
	case code.IsFailure():
		b.free(batch, s, id)
		b.fill(batch, s, &out)
	case e.State == inflight.PubrelSent:
		out.add(c, ack(packets.Pubrel, id, reason.Success))
	default:
		if s.unsent[id] { // PUBREC for a PUBLISH the previous connection sent
			delete(s.unsent, id)
			s.sent++
		}
		e.State = inflight.PubrelSent
		m := e.Msg
		e.Msg, e.Body, e.MsgSeq = nil, nil, 0
		if s.durable() {
			batch.PutOutbound(s.ClientID, e.OutboundRecord)
		}
		s.unhold(m)
		s.release(batch, m)
		b.sharedAcked(batch, s, id) // delivered: completed with this member
		out.add(c, ack(packets.Pubrel, id, reason.Success))
	}
	b.submitSends(batch, s, c, out)
}
