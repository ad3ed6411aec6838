package session

import (
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/session/reason"
)

// Refuse answers a PUBLISH of QoS qos and packet id id from the client of s on c, which the caller
// decided not to accept (not authorized, quota exceeded...), with code, a failure code (0x80 or
// more; anything less is sent as 0x80, since a success code would promise what was not stored).
// Nothing is routed or stored.
//
// A 5.0 client gets PUBACK (QoS 1) or PUBREC (QoS 2) with code, after every commit submitted before
// it, so that the refusal does not overtake the answers to earlier packets. The id does not enter
// the inbound table: a PUBLISH with that id after a PUBREC of 0x80 or more is a new message
// [MQTT-4.3.3-9]. A QoS 2 id that already awaits PUBREL is answered as
// the first time instead, as every resend is [MQTT-4.3.3-10]: it was accepted and routed.
//
// 3.1.1 has no refusal code. A PUBLISH refused as Not authorized is acknowledged as if accepted
// (PUBACK, or PUBREC whose id is not stored, so that a later PUBREL gets PUBCOMP as an unknown id
// does) and not routed, as 3.1.1 allows [MQTT-3.3.5-2]; any other refusal closes the connection. A
// QoS 0 PUBLISH has no answer to carry a refusal: nothing is sent. Every refusal as Not authorized
// is counted in Metrics.PublishRefused.
func (b *Broker) Refuse(s *Session, c Conn, qos byte, id uint16, code reason.Code) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return
	}
	if qos == 2 {
		if first, ok := s.inbound.Lookup(id); ok {
			b.repeatPubrec(c, id, reason.Code(first))
			return
		}
	}
	b.refuse(s, c, qos, id, code)
}

// refuse sends the refusal Refuse describes. Caller holds b.mu.
func (b *Broker) refuse(s *Session, c Conn, qos byte, id uint16, code reason.Code) {
	if code == reason.NotAuthorized {
		b.Metrics.PublishRefused.Add(1)
	}
	if qos == 0 {
		return
	}
	if s.protocolVersion != 5 && code != reason.NotAuthorized {
		c.Close(reason.UnspecifiedError)
		return
	}
	if s.protocolVersion != 5 {
		code = reason.Success // 3.1.1 acknowledges and drops; the encoder writes no reason code
	} else if !code.IsFailure() {
		code = reason.UnspecifiedError
	}
	typ := byte(packets.Puback)
	if qos == 2 {
		typ = packets.Pubrec
	}
	b.submit(nil, func(error) { c.Send(ack(typ, id, code)) })
}
