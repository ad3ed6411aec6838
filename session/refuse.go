package session

import (
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/session/reason"
)

// refuse answers a QoS 1/2 PUBLISH that cannot be stored: 5.0 gets PUBACK/PUBREC 0x80, 3.1.1 has no
// way to say no, so its connection is closed. Caller holds b.mu.
func (b *Broker) refuse(s *Session, c Conn, qos byte, id uint16) {
	if s.ProtocolVersion != 5 {
		c.Close(reason.UnspecifiedError)
		return
	}
	typ := byte(packets.Puback)
	if qos == 2 {
		typ = packets.Pubrec
	}
	b.submit(nil, func(error) { c.Send(ack(typ, id, reason.UnspecifiedError)) })
}
