package session

import (
	"log/slog"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/inflight"
)

const codeSessionTakenOver = 0x8E

// ConnectRequest is what a CONNECT asks of the session layer.
type ConnectRequest struct {
	ClientID        string
	ProtocolVersion byte   // 4 or 5
	CleanStart      bool   // 3.1.1 CleanSession
	ExpiryInterval  uint32 // 3.1.1: 0 with CleanSession=1, NeverExpire with CleanSession=0
	Will            *inflight.Will
	ReceiveMax      uint16 // the client's; 0 means 65535
	MaxPacketSize   uint32 // the client's; 0 means no limit
}

// Connect gives the session of req.ClientID to c. An existing connection with the same client id is
// closed first (5.0: DISCONNECT 0x8E) [MQTT-3.1.4-3]; Clean Start discards the old session
// [MQTT-3.1.2-4], otherwise it is resumed with its in-flight state [MQTT-3.1.2-5].
//
// done runs once the session record is committed: the caller sends CONNACK from it. Right after
// done returns, and only if err is nil, the unacknowledged PUBLISHes are resent with DUP=1 and
// their ids, and unacknowledged PUBRELs resent, in their original order and within the client's
// Receive Maximum, then queued messages follow [MQTT-4.4.0-1].
func (b *Broker) Connect(req ConnectRequest, c Conn, done func(present bool, err error)) *Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := &inflight.Batch{}
	var out outbox
	old := b.sessions[req.ClientID]
	if old != nil {
		if old.conn != nil {
			oldConn := old.conn
			old.conn = nil
			oldConn.Close(codeSessionTakenOver)
			// The old connection's will: sent now if it has no delay or the session ends here.
			if old.will != nil && (old.will.Delay == 0 || req.CleanStart) {
				b.publishWill(batch, old, &out)
			}
		} else if old.willTimer != nil && req.CleanStart {
			b.publishWill(batch, old, &out) // the session ends before the will delay [MQTT-3.1.3-9]
		}
		stopTimer(&old.expiry)
		stopTimer(&old.willTimer)
	}

	s, present := old, old != nil && !req.CleanStart
	if !present {
		if old != nil {
			b.endSession(batch, old)
		}
		s = &Session{ClientID: req.ClientID}
		b.sessions[req.ClientID] = s
	}
	wasDurable := present && s.durable()
	s.ProtocolVersion = req.ProtocolVersion
	s.ExpiryInterval = req.ExpiryInterval
	s.will = req.Will
	s.conn = c
	s.disconnectedAt = 0
	switch {
	case wasDurable && !s.durable():
		b.forget(batch, s)
	case !wasDurable && s.durable():
		b.persist(batch, s)
	case s.durable():
		batch.PutSession(s.record())
	}

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
			out.add(c, ack(packets.Pubrel, e.PacketID, codeSuccess))
		case s.sent < s.receiveMax: // [MQTT-3.3.1-1] DUP=1, same id
			s.sent++
			out.add(c, publishPacket(e.Msg, e.PacketID, e.QoS, true, e.Retain, e.SubIDs, now))
		default:
			s.unsent[e.PacketID] = true
		}
	}
	b.fill(batch, s, &out)

	b.submit(batch, func(err error) {
		done(present, err)
		if err == nil {
			out.flush()
		}
	})
	return s
}

// Disconnected tells the broker that c, which held s, is gone. publishWill is true for an abnormal
// end or DISCONNECT 0x04; a normal DISCONNECT deletes the will [MQTT-3.1.2-10]. newExpiry, if not
// nil, is the Session Expiry Interval the client set in its DISCONNECT.
func (b *Broker) Disconnected(s *Session, c Conn, publishWill bool, newExpiry *uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return // taken over: the new owner decided the will
	}
	batch := &inflight.Batch{}
	var out outbox
	s.conn = nil
	s.disconnectedAt = b.now().UnixNano()
	if newExpiry != nil && *newExpiry != s.ExpiryInterval {
		wasDurable := s.durable()
		s.ExpiryInterval = *newExpiry
		if wasDurable && !s.durable() {
			b.forget(batch, s)
		}
	}
	if !publishWill {
		s.will = nil
	}
	if s.will != nil {
		if s.will.Delay == 0 || !s.durable() {
			b.publishWill(batch, s, &out)
		} else {
			b.scheduleWill(s, time.Duration(s.will.Delay)*time.Second)
		}
	}
	if !s.durable() {
		b.endSession(batch, s)
	} else {
		batch.PutSession(s.record())
		b.scheduleExpiry(s)
	}
	b.submit(batch, func(err error) {
		if err == nil {
			out.flush()
		}
	})
}

// scheduleExpiry arms the timer that ends an offline session. Caller holds b.mu.
func (b *Broker) scheduleExpiry(s *Session) {
	stopTimer(&s.expiry)
	if b.closed || s.ExpiryInterval == NeverExpire {
		return
	}
	deadline := s.disconnectedAt + int64(s.ExpiryInterval)*int64(time.Second)
	wait := time.Duration(deadline - b.now().UnixNano())
	s.expiry = time.AfterFunc(max(wait, 0), func() { b.expire(s) })
}

// expire ends s if it is still offline and still the registered session.
func (b *Broker) expire(s *Session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.sessions[s.ClientID] != s || s.conn != nil {
		return
	}
	batch := &inflight.Batch{}
	var out outbox
	if s.will != nil {
		b.publishWill(batch, s, &out) // the session ends before the will delay [MQTT-3.1.3-9]
	}
	b.endSession(batch, s)
	b.Metrics.SessionsExpired.Add(1)
	b.log.Info("session expired", slog.String("client", s.ClientID))
	b.submit(batch, func(err error) {
		if err == nil {
			out.flush()
		}
	})
}

// scheduleWill publishes s's will after delay unless the session is resumed first. Caller holds b.mu.
func (b *Broker) scheduleWill(s *Session, delay time.Duration) {
	stopTimer(&s.willTimer)
	if b.closed {
		return
	}
	w := s.will
	s.willTimer = time.AfterFunc(max(delay, 0), func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed || b.sessions[s.ClientID] != s || s.conn != nil || s.will != w {
			return
		}
		s.willTimer = nil
		batch := &inflight.Batch{}
		var out outbox
		b.publishWill(batch, s, &out)
		b.submit(batch, func(err error) {
			if err == nil {
				out.flush()
			}
		})
	})
}

// publishWill routes s's will as a new message and clears it. Caller holds b.mu.
func (b *Broker) publishWill(batch *inflight.Batch, s *Session, out *outbox) {
	w := s.will
	s.will = nil
	stopTimer(&s.willTimer)
	if w == nil || w.Message == nil {
		return
	}
	now := b.now().UnixNano()
	msg := w.Message.Clone()
	msg.Seq = b.journal.NextSeq()
	msg.Created = now
	msg.ExpiresAt = 0
	if msg.Properties.MessageExpiryInterval > 0 {
		msg.ExpiresAt = now + int64(msg.Properties.MessageExpiryInterval)*int64(time.Second)
	}
	b.route(batch, msg, s.ClientID, out)
	b.retain(batch, msg)
	if s.durable() && b.sessions[s.ClientID] == s {
		batch.PutSession(s.record())
	}
}

// endSession removes s and everything it holds. Caller holds b.mu.
func (b *Broker) endSession(batch *inflight.Batch, s *Session) {
	stopTimer(&s.expiry)
	stopTimer(&s.willTimer)
	if b.sessions[s.ClientID] == s {
		delete(b.sessions, s.ClientID)
	}
	for f := range s.subs {
		b.subs.Remove(f, s.ClientID)
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
			batch.PutMessage(e.Msg)
		}
		batch.PutOutbound(s.ClientID, e.OutboundRecord)
	}
	for _, q := range s.queue {
		if q.msg.Ref() {
			batch.PutMessage(q.msg)
		}
		batch.PutQueued(s.ClientID, inflight.QueuedRecord{Order: q.order, QoS: q.qos, MsgSeq: q.msg.Seq, SubIDs: q.subIDs, Retain: q.retain})
	}
}
