package session

import (
	"github.com/oncemq/oncemq/inflight"
)

// endSession removes s and everything it holds. Caller holds b.mu.
func (b *Broker) endSession(batch *inflight.Batch, s *Session) {
	stopTimer(&s.expiry)
	stopTimer(&s.willTimer)
	if b.sessions[s.ClientID] == s {
		delete(b.sessions, s.ClientID)
	}
	b.memberGone(batch, s)
	for f := range s.subs {
		b.unindexSub(batch, s, f)
	}
	if s.durable() {
		b.forget(batch, s)
	}
}

// forget removes s from the journal and drops its message references; s lives on in memory only.
// Caller holds b.mu.
func (b *Broker) forget(batch *inflight.Batch, s *Session) {
	batch.DeleteSession(s.ClientID)
	for _, e := range s.outbound.InOrder() {
		if e.Msg != nil && e.Msg.Unref() {
			batch.DeleteMessage(e.Msg.Seq)
		}
	}
	for _, q := range s.queue {
		if q.msg.Unref() {
			batch.DeleteMessage(q.msg.Seq)
		}
	}
}

// persist writes everything s holds to the journal: a session that lived in memory becomes
// durable. Caller holds b.mu.
func (b *Broker) persist(batch *inflight.Batch, s *Session) {
	batch.PutSession(s.record())
	for _, sub := range s.subs {
		batch.PutSubscription(s.ClientID, sub)
	}
	for _, r := range s.inbound.Records() {
		batch.PutInbound(s.ClientID, r.PacketID, r.Reason)
	}
	for _, e := range s.outbound.InOrder() {
		if e.Msg != nil && e.Msg.Ref() {
			batch.PutMessage(e.Body) // a session that was not durable pins every body
		}
		batch.PutOutbound(s.ClientID, e.OutboundRecord)
	}
	for _, q := range s.queue {
		if q.msg.Ref() {
			batch.PutMessage(q.body)
		}
		batch.PutQueued(s.ClientID, inflight.QueuedRecord{Order: q.order, QoS: q.qos, MsgSeq: q.msg.Seq, SubIDs: q.subIDs, Retain: q.retain})
	}
}
