package session

import (
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// restore rebuilds the working state from what the journal recovered at start-up. Every session
// starts offline; its expiry and its pending will count from when it was disconnected. It takes
// the queues out of rec (rec.Sessions[i].Queue is nil afterwards). Takes b.mu.
func (b *Broker) restore(rec *inflight.Recovered) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range rec.Retained {
		// Retained messages are stored by topic; they get a fresh Seq in case a durable session
		// is given one later.
		m.Seq = b.journal.NextSeq()
		b.retained[m.Topic] = m
		b.retainedBytes += messageBytes(m)
	}
	b.restoreDedup(rec.Dedup)
	for i := range rec.Sessions {
		rs := &rec.Sessions[i]
		r := rs.Record
		s := &Session{
			ClientID:        r.ClientID,
			protocolVersion: r.ProtocolVersion,
			expiryInterval:  r.ExpiryInterval,
			disconnectedAt:  r.DisconnectedAt,
			will:            r.Will,
			owned:           r.Owner != nil,
			subs:            make(map[string]inflight.SubscriptionRecord, len(rs.Subscriptions)),
		}
		if r.Owner != nil {
			s.Username = *r.Owner
		}
		for _, sub := range rs.Subscriptions {
			s.subs[sub.Filter] = sub
			b.indexSub(s, sub)
		}
		for _, in := range rs.Inbound {
			s.inbound.Add(in.PacketID, in.Reason)
		}
		for _, o := range rs.Outbound {
			e := &inflight.OutboundEntry{OutboundRecord: o}
			if o.State == inflight.PublishSent {
				e.Msg = rec.Messages.Get(o.MsgSeq) // the body stays in the file until it is sent
				s.hold(e.Msg)
			}
			s.outbound.Add(e)
			s.order = max(s.order, o.Order)
		}
		// One allocation for the whole queue, not one per entry: a million queued messages are
		// restored in less time and memory. No body: it is read from the file when it is sent
		// (Broker.body).
		entries := make([]queued, len(rs.Queue))
		s.queue = make([]*queued, len(rs.Queue))
		for i, q := range rs.Queue {
			m := rec.Messages.Get(q.MsgSeq)
			entries[i] = queued{order: q.Order, qos: q.QoS, msg: m, subIDs: q.SubIDs, retain: q.Retain}
			s.queue[i] = &entries[i]
			s.hold(m)
			s.order = max(s.order, q.Order)
		}
		// Each queue is held once: its records can be collected while the next sessions'
		// queues are built (a million queued messages were held twice at start-up).
		rs.Queue = nil
		b.sessions[s.ClientID] = s
		b.scheduleExpiry(s)
		if s.will != nil {
			wait := time.Duration(s.disconnectedAt + int64(s.will.Delay)*int64(time.Second) - b.now().UnixNano())
			b.scheduleWill(s, wait)
		}
	}
	b.restoreShared(rec)
	if len(rec.ExpiredWills) > 0 {
		// Sessions that ended while the broker was down leave their wills, due now [MQTT-3.1.3-9].
		batch := &inflight.Batch{}
		var out outbox
		for _, ew := range rec.ExpiredWills {
			gone := &Session{ClientID: ew.ClientID, will: ew.Will}
			b.publishWill(batch, gone, &out)
		}
		b.log.Info("published the wills of sessions that expired while the broker was down", "wills", len(rec.ExpiredWills))
		b.submit(batch, nil)
	}
}
