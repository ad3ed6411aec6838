package session

import (
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
)

// deliver gives m to s at qos: sent at once if the connection has send quota and nothing is waiting
// ahead of it, queued otherwise. QoS 0 goes only to a connected session and is never queued.
// Caller holds b.mu.
func (b *Broker) deliver(batch *inflight.Batch, s *Session, m *inflight.Message, qos byte, subIDs []int, retain bool, out *outbox) {
	now := b.now().UnixNano()
	if m.Expired(now) { // [MQTT-3.3.2-5]
		b.dropped(s.ClientID, m.Topic, Expired)
		return
	}
	if qos == 0 {
		if s.connected() {
			pk := publishPacket(m, 0, 0, false, retain, subIDs, now)
			if b.checkSize(s, pk) {
				out.add(s.conn, pk)
			}
		}
		return
	}
	q := &queued{order: s.nextOrder(), qos: qos, msg: m, subIDs: subIDs, retain: retain}
	if s.connected() && len(s.queue) == 0 && len(s.unsent) == 0 && s.sent < s.receiveMax {
		b.send(batch, s, q, now, out)
		return
	}
	if len(s.queue) >= b.opts.MaxQueued {
		b.dropped(s.ClientID, m.Topic, QueueFull) // logged in the drop summary, not one line each
		return
	}
	s.queue = append(s.queue, q)
	if s.durable() {
		if m.Ref() {
			batch.PutMessage(m)
		}
		batch.PutQueued(s.ClientID, inflight.QueuedRecord{Order: q.order, QoS: qos, MsgSeq: m.Seq, SubIDs: subIDs, Retain: retain})
	}
}

// send assigns q an outbound id, records it in flight and queues the PUBLISH. The caller has
// checked the send quota. Caller holds b.mu.
func (b *Broker) send(batch *inflight.Batch, s *Session, q *queued, now int64, out *outbox) {
	pk := publishPacket(q.msg, 1, q.qos, false, q.retain, q.subIDs, now)
	if !b.checkSize(s, pk) { // discarded as if delivered [MQTT-3.1.2-25]
		return
	}
	id, ok := s.outbound.Allocate()
	if !ok {
		return // cannot happen while Receive Maximum <= 65535 bounds the table
	}
	pk.PacketID = id
	e := &inflight.OutboundEntry{
		OutboundRecord: inflight.OutboundRecord{PacketID: id, State: inflight.PublishSent, QoS: q.qos,
			Order: q.order, MsgSeq: q.msg.Seq, SubIDs: q.subIDs, Retain: q.retain},
		Msg: q.msg,
	}
	s.outbound.Add(e)
	s.sent++
	if s.durable() {
		if q.msg.Ref() {
			batch.PutMessage(q.msg)
		}
		batch.PutOutbound(s.ClientID, e.OutboundRecord)
	}
	out.add(s.conn, pk)
}

// checkSize reports whether pk fits the client's Maximum Packet Size; a delivery that does not is
// dropped and counted [MQTT-3.1.2-25]. Caller holds b.mu.
func (b *Broker) checkSize(s *Session, pk packets.Packet) bool {
	if fits(pk, s.protocolVersion, s.maxPacketSize) {
		return true
	}
	b.dropped(s.ClientID, pk.TopicName, TooLarge) // logged in the drop summary, not one line each
	return false
}
