package session

import (
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// resume sets up s's new connection (its Receive Maximum and Maximum Packet Size) and queues what
// a resumed session is owed, in this order [MQTT-4.4.0-1]: every unacknowledged PUBLISH again with
// DUP=1 and its own id [MQTT-3.3.1-1] and every PUBREL again, in their original order, the
// PUBLISHes within the client's Receive Maximum; then the queue (fill). Nothing of it needs a commit
// of its own: the ids and states are already durable. Caller holds b.mu.
func (b *Broker) resume(batch *inflight.Batch, s *Session, req ConnectRequest, out *outbox) {
	s.receiveMax = int(req.ReceiveMax)
	if s.receiveMax == 0 {
		s.receiveMax = 65535
	}
	s.maxPacketSize = req.MaxPacketSize
	s.sent = 0
	s.unsent = make(map[uint16]bool)
	now := b.now().UnixNano()
	for _, e := range s.outbound.InOrder() {
		switch {
		case e.State == inflight.PubrelSent: // PUBREL is never held back by the quota [MQTT-4.9.0-3]
			s.sent++
			out.add(s.conn, ack(packets.Pubrel, e.PacketID, reason.Success))
		case s.sent < s.receiveMax && len(s.unsent) == 0 && b.reserveResend(batch, s, e, now, out):
		default:
			s.unsent[e.PacketID] = true
		}
	}
	b.fill(batch, s, out)
}

// reserveResend queues e's PUBLISH again with DUP=1 and its id [MQTT-3.3.1-1] if the connection's
// write queue has room for it, and reports whether it is done with e: an entry whose body cannot
// be read is dropped as if delivered (body). Caller holds b.mu.
func (b *Broker) reserveResend(batch *inflight.Batch, s *Session, e *inflight.OutboundEntry, now int64, out *outbox) bool {
	if e.Body = b.body(s, e.Body, e.Msg); e.Body == nil {
		s.unsent[e.PacketID] = true // it used no slot: free gives none back
		b.free(batch, s, e.PacketID)
		return true
	}
	pk := publishPacket(e.Body, e.PacketID, e.QoS, true, e.Retain, e.SubIDs, now)
	if !s.conn.Reserve(pk.Cost(0)) {
		return false
	}
	s.sent++
	out.add(s.conn, pk)
	return true
}
