package session

import (
	"github.com/oncemq/oncemq/inflight"
)

// Puback handles a PUBACK from the client: a QoS 1 delivery is complete, its id is freed and the
// slot goes to the next waiting message [MQTT-4.3.2-5].
func (b *Broker) Puback(s *Session, c Conn, id uint16) {
	b.completeOutbound(s, c, id, inflight.PublishSent, 1)
}
