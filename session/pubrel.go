package session

import (
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/internal/failpoint"
	"github.com/oncemq/oncemq/session/reason"
)

// Pubrel handles a PUBREL from the client: the inbound id is freed and committed, then PUBCOMP is
// sent [MQTT-4.3.3-11]. An unknown id is answered with PUBCOMP 0x92 in 5.0 and the connection stays
// open; it is normal after a resend.
func (b *Broker) Pubrel(s *Session, c Conn, id uint16) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return
	}
	code := reason.Success
	batch := &inflight.Batch{}
	if s.inbound.Remove(id) {
		if s.durable() {
			batch.DeleteInbound(s.ClientID, id)
		}
	} else if s.protocolVersion == 5 {
		code = reason.PacketIdentifierNotFound
	}
	b.submitCounted(batch, func(err error) {
		if b.failed(err) {
			c.Close(reason.UnspecifiedError)
			return
		}
		failpoint.BeforeSend(packets.Pubcomp, 0, code)
		c.Send(ack(packets.Pubcomp, id, code))
	})
}
