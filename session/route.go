package session

import (
	"log/slog"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
)

// match is what one session gets of one message after merging all its matching subscriptions.
type match struct {
	qos    byte
	subIDs []int
	retain bool
}

// route fans m out to every session with a matching subscription and reports how many matched.
// Overlapping subscriptions of one session deliver once, at the highest granted QoS, with every
// Subscription Identifier [MQTT-3.3.4-2]. Caller holds b.mu.
func (b *Broker) route(batch *inflight.Batch, m *inflight.Message, publisher string, out *outbox) int {
	matches := make(map[string]*match)
	b.subs.Match(m.Topic, func(clientID, filter string, sub inflight.SubscriptionRecord) {
		if sub.NoLocal && clientID == publisher { // [MQTT-3.8.3-3]
			return
		}
		mt := matches[clientID]
		if mt == nil {
			mt = &match{}
			matches[clientID] = mt
		}
		mt.qos = max(mt.qos, min(m.QoS, sub.QoS)) // [MQTT-3.8.4-8]
		if sub.Identifier > 0 {
			mt.subIDs = append(mt.subIDs, sub.Identifier)
		}
		if sub.RetainAsPublished && m.Retain { // [MQTT-3.3.1-12] [MQTT-3.3.1-13]
			mt.retain = true
		}
	})
	for clientID, mt := range matches {
		if s := b.sessions[clientID]; s != nil {
			b.deliver(batch, s, m, mt.qos, mt.subIDs, mt.retain, out)
		}
	}
	return len(matches)
}

// deliver gives m to s at qos: sent at once if the connection has send quota and nothing is waiting
// ahead of it, queued otherwise. QoS 0 goes only to a connected session and is never queued.
// Caller holds b.mu.
func (b *Broker) deliver(batch *inflight.Batch, s *Session, m *inflight.Message, qos byte, subIDs []int, retain bool, out *outbox) {
	now := b.now().UnixNano()
	if m.Expired(now) { // [MQTT-3.3.2-5]
		b.Metrics.Expired.Add(1)
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
		b.Metrics.QueueOverflow.Add(1)
		b.log.Warn("queue full: message dropped", slog.String("client", s.ClientID),
			slog.String("topic", m.Topic), slog.Int("max_queued", b.opts.MaxQueued))
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
// dropped and counted [MQTT-3.1.2-25].
func (b *Broker) checkSize(s *Session, pk packets.Packet) bool {
	if fits(pk, s.ProtocolVersion, s.maxPacketSize) {
		return true
	}
	b.Metrics.TooLarge.Add(1)
	b.log.Warn("delivery larger than the client's maximum packet size: dropped",
		slog.String("client", s.ClientID), slog.String("topic", pk.TopicName), slog.Uint64("max", uint64(s.maxPacketSize)))
	return false
}

// release drops the session's durable reference to m. Caller holds b.mu.
func (s *Session) release(batch *inflight.Batch, m *inflight.Message) {
	if m != nil && s.durable() && m.Unref() {
		batch.DeleteMessage(m.Seq)
	}
}

// fill uses the connection's free send quota: first the entries still to be resent on this
// connection, in their original order, then the queue [MQTT-4.4.0-1] [MQTT-3.3.4-9]. Expired queued
// messages are dropped without using an id or a slot. Caller holds b.mu.
func (b *Broker) fill(batch *inflight.Batch, s *Session, out *outbox) {
	if !s.connected() {
		return
	}
	now := b.now().UnixNano()
	if len(s.unsent) > 0 {
		for _, e := range s.outbound.InOrder() {
			if s.sent >= s.receiveMax {
				return
			}
			if !s.unsent[e.PacketID] {
				continue
			}
			delete(s.unsent, e.PacketID)
			s.sent++
			out.add(s.conn, publishPacket(e.Msg, e.PacketID, e.QoS, true, e.Retain, e.SubIDs, now)) // [MQTT-3.3.1-1]
		}
	}
	for len(s.queue) > 0 && s.sent < s.receiveMax {
		q := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if s.durable() {
			batch.DeleteQueued(s.ClientID, q.order)
		}
		if q.msg.Expired(now) { // [MQTT-3.3.2-5]
			b.Metrics.Expired.Add(1)
			s.release(batch, q.msg)
			continue
		}
		// The queue's reference moves to the outbound entry: send takes a new one before the
		// queue's is released, so the message is never deleted in between.
		b.send(batch, s, q, now, out)
		s.release(batch, q.msg)
	}
}
