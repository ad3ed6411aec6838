package session

import (
	"github.com/oncemq/oncemq/inflight"
)

// Pubcomp handles a PUBCOMP: a QoS 2 delivery is complete and its id is freed [MQTT-4.3.3-6].
func (b *Broker) Pubcomp(s *Session, c Conn, id uint16) {
	b.completeOutbound(s, c, id, inflight.PubrelSent, 2)
}
