package session

import (
	"github.com/oncemq/oncemq/inflight"
)

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
			if e.Body = b.body(s, e.Body, e.Msg); e.Body == nil {
				b.free(batch, s, e.PacketID) // unreadable: dropped as if delivered
				continue
			}
			pk := publishPacket(e.Body, e.PacketID, e.QoS, true, e.Retain, e.SubIDs, now) // [MQTT-3.3.1-1]
			if !s.conn.Reserve(pk.Cost(0)) {
				return
			}
			delete(s.unsent, e.PacketID)
			s.sent++
			out.add(s.conn, pk)
		}
	}
	for len(s.queue) > 0 && s.sent < s.receiveMax {
		q := s.queue[0]
		if q.msg.Expired(now) { // [MQTT-3.3.2-5]
			b.dequeue(batch, s)
			b.dropped(s.ClientID, b.topicOf(q), Expired)
			s.unhold(q.msg)
			s.release(batch, q.msg)
			continue
		}
		// The queue's reference moves to the outbound entry: send takes a new one before the
		// queue's is released, so the message is never deleted in between. Its bytes stay held.
		res := b.send(batch, s, q, now, out)
		if res == noRoom {
			return // sent when the connection's write queue drains (Drained)
		}
		b.dequeue(batch, s)
		if res == discarded || res == unreadable {
			s.unhold(q.msg)
		}
		s.release(batch, q.msg)
	}
	if len(s.queue) == 0 {
		b.fillShared(batch, s, out)
	}
}

// dequeue removes the head of s's queue. Caller holds b.mu.
func (b *Broker) dequeue(batch *inflight.Batch, s *Session) {
	q := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	if s.durable() {
		batch.DeleteQueued(s.ClientID, q.order)
	}
}

// Drained tells the broker that c, which holds s, has room in its write queue again: the messages
// that waited for it are sent. It is called by the connection's writer, without any lock held.
func (b *Broker) Drained(s *Session, c Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return
	}
	batch := &inflight.Batch{}
	var out outbox
	b.fill(batch, s, &out)
	b.submitSends(batch, s, c, out)
}
