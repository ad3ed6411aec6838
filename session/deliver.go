package session

import (
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
	if !b.hasRoom(s, m) && !b.makeRoom(batch, s, m) {
		// Reached only when dropping is allowed: a will, a retained message on SUBSCRIBE, or
		// Options.QueueFull set to drop. With RefuseWhenFull, route refused the PUBLISH before.
		s.turnedAway = true
		b.dropped(s.ClientID, m.Topic, QueueFull)
		return
	}
	h := m.Handle()
	q := &queued{order: s.nextOrder(), qos: qos, msg: h, body: s.pinned(m), subIDs: subIDs, retain: retain}
	s.hold(h)
	if s.connected() && len(s.queue) == 0 && len(s.unsent) == 0 && s.sent < s.receiveMax {
		switch b.send(batch, s, q, now, out) {
		case sent:
			return
		case discarded:
			s.unhold(h)
			return
		}
	}
	s.queue = append(s.queue, q)
	if s.durable() {
		if h.Ref() {
			batch.PutMessage(m) // the batch keeps the body until its commit (LoadMessage finds it)
		}
		batch.PutQueued(s.ClientID, inflight.QueuedRecord{Order: q.order, QoS: qos, MsgSeq: m.Seq, SubIDs: subIDs, Retain: retain})
	}
}

// sendResult is what send did with a message.
type sendResult int

const (
	sent       sendResult = iota // in flight now
	discarded                    // dropped as if delivered (too large for the client)
	noRoom                       // the connection's write queue is full: the message stays queued
	unreadable                   // its body could not be read: dropped and counted (Broker.body)
)

// send assigns q an outbound id, records it in flight and queues the PUBLISH. The caller has
// checked the send quota; the connection's write queue may still refuse it. Caller holds b.mu.
func (b *Broker) send(batch *inflight.Batch, s *Session, q *queued, now int64, out *outbox) sendResult {
	body := b.body(s, q.body, q.msg)
	if body == nil {
		return unreadable
	}
	pk := publishPacket(body, 1, q.qos, false, q.retain, q.subIDs, now)
	if !b.checkSize(s, pk) { // discarded as if delivered [MQTT-3.1.2-25]
		return discarded
	}
	if !s.conn.Reserve(pk.Cost(0)) {
		return noRoom
	}
	id, ok := s.outbound.Allocate()
	if !ok {
		return noRoom // cannot happen while Receive Maximum <= 65535 bounds the table
	}
	pk.ID = id
	e := &inflight.OutboundEntry{
		OutboundRecord: inflight.OutboundRecord{PacketID: id, State: inflight.PublishSent, QoS: q.qos,
			Order: q.order, MsgSeq: q.msg.Seq, SubIDs: q.subIDs, Retain: q.retain},
		Msg:  q.msg,
		Body: body, // s is connected: it keeps the body for a resend until it goes offline
	}
	s.outbound.Add(e)
	s.sent++
	if s.durable() {
		if q.msg.Ref() {
			batch.PutMessage(body)
		}
		batch.PutOutbound(s.ClientID, e.OutboundRecord)
	}
	out.add(s.conn, pk)
	return sent
}

// checkSize reports whether pk fits the client's Maximum Packet Size; a delivery that does not is
// dropped and counted [MQTT-3.1.2-25]. Caller holds b.mu.
func (b *Broker) checkSize(s *Session, pk Outgoing) bool {
	if fits(&pk, s.protocolVersion, s.maxPacketSize) {
		return true
	}
	b.dropped(s.ClientID, pk.Msg.Topic, TooLarge)
	return false
}
