package session

import (
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// Unsubscribe handles UNSUBSCRIBE. Deliveries already in flight are completed [MQTT-3.10.4-3].
func (b *Broker) Unsubscribe(s *Session, c Conn, id uint16, filters []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return
	}
	batch := &inflight.Batch{}
	codes := make([]byte, len(filters))
	for i, f := range filters {
		if _, ok := s.subs[f]; !ok {
			codes[i] = byte(reason.NoSubscriptionExisted)
			continue
		}
		delete(s.subs, f)
		b.unindexSub(batch, s, f)
		if s.durable() {
			batch.DeleteSubscription(s.ClientID, f)
		}
	}
	unsuback := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsuback}, PacketID: id, ReasonCodes: codes}
	b.submit(batch, func(err error) {
		if err != nil {
			c.Close(reason.UnspecifiedError)
			return
		}
		c.Send(PacketOf(unsuback)) // [MQTT-3.10.4-4]
	})
}
