package session

import (
	"errors"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// ConnectRequest is what a CONNECT asks of the session layer.
type ConnectRequest struct {
	ClientID        string
	Username        string // the identity the client authenticated as; "" when none
	ProtocolVersion byte   // 4 or 5
	CleanStart      bool   // 3.1.1 CleanSession
	ExpiryInterval  uint32 // 3.1.1: 0 with CleanSession=1, NeverExpire with CleanSession=0
	Will            *inflight.Will
	ReceiveMax      uint16 // the client's; 0 means 65535
	MaxPacketSize   uint32 // the client's; 0 means no limit
	NoProblemInfo   bool   // 5.0 Request Problem Information 0 [MQTT-3.1.2-29]
	// Subscribes are the SUBSCRIBEs the client sent right behind its CONNECT, already read: they
	// are applied with the CONNECT, under the same lock and in the same batch, so that a PUBLISH
	// another client sends once it sees a later commit is routed to them.
	Subscribes []PipelinedSubscribe
}

// PipelinedSubscribe is a SUBSCRIBE read together with its CONNECT. Connect fills Codes with the
// reason codes its SUBACK carries.
type PipelinedSubscribe struct {
	PacketID uint16
	Requests []SubscriptionRequest
	Codes    []reason.Code
}

// ErrNotOwner is given to Connect's done when the client id's session belongs to another identity:
// the CONNECT must be refused (Not authorized) and the session is left as it was.
var ErrNotOwner = errors.New("session: the client id belongs to another user")

// Connect gives the session of req.ClientID to c. An existing connection with the same client id is
// closed first (5.0: DISCONNECT 0x8E) [MQTT-3.1.4-3]; Clean Start discards the old session
// [MQTT-3.1.2-4], otherwise it is resumed with its in-flight state [MQTT-3.1.2-5].
//
// done runs once the session record is committed: the caller sends CONNACK from it. Right after
// done returns, and only if err is nil, the unacknowledged PUBLISHes are resent with DUP=1 and
// their ids, and unacknowledged PUBRELs resent, in their original order and within the client's
// Receive Maximum, then queued messages follow [MQTT-4.4.0-1].
//
// A session belongs to the identity (req.Username) that created it. A CONNECT from another
// identity, anonymous included, neither takes it over nor discards it: done gets ErrNotOwner,
// after every commit submitted before, and Connect returns nil. The owner is part of the session
// record, committed before done.
func (b *Broker) Connect(req ConnectRequest, c Conn, done func(present bool, err error)) *Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := &inflight.Batch{}
	var out outbox
	old := b.sessions[req.ClientID]
	if old != nil && !old.mayConnect(req.Username) {
		b.Metrics.NotOwner.Add(1)
		b.submit(nil, func(error) { done(false, ErrNotOwner) })
		return nil
	}
	if old == nil && len(b.sessions) >= b.opts.MaxSessions {
		b.submit(nil, func(error) { done(false, ErrTooManySessions) })
		return nil
	}
	if old != nil {
		b.takeOver(batch, old, req.CleanStart, &out)
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
	s.Username = req.Username // the same as before, or the first owner of a session that had none
	s.owned = true
	s.protocolVersion = req.ProtocolVersion
	s.expiryInterval = req.ExpiryInterval
	s.will = req.Will
	s.noProblemInfo = req.NoProblemInfo
	s.conn = c
	s.disconnectedAt = 0
	switch {
	case wasDurable && !s.durable():
		b.pinAll(batch, s) // in memory only from now on: the file will not keep the bodies
		b.forget(batch, s)
	case !wasDurable && s.durable():
		b.persist(batch, s)
	case s.durable():
		batch.PutSession(s.record())
	}
	b.resume(batch, s, req, &out)
	var subOut outbox // SUBACKs and retained messages, after the CONNACK and what resume sends
	for i := range req.Subscribes {
		ps := &req.Subscribes[i]
		var retained outbox
		var suback packets.Packet
		ps.Codes, suback = b.subscribeAll(batch, s, ps.PacketID, ps.Requests, &retained)
		subOut.add(c, PacketOf(suback)) // [MQTT-3.8.4-1]
		subOut.addAll(&retained)
	}

	b.submit(batch, func(err error) {
		done(present, err)
		if err == nil {
			out.flush()
			subOut.flush()
		}
	})
	return s
}

// takeOver takes old from its connection, if it has one, before a new connection gets its client
// id: the old connection is closed (5.0: DISCONNECT 0x8E) and its will decided. Caller holds b.mu.
func (b *Broker) takeOver(batch *inflight.Batch, old *Session, cleanStart bool, out *outbox) {
	if old.conn != nil {
		oldConn := old.conn
		old.conn = nil
		oldConn.Close(reason.SessionTakenOver)
		// The old connection's will: sent now if it has no delay or the session ends here.
		if old.will != nil && (old.will.Delay == 0 || cleanStart) {
			b.publishWill(batch, old, out)
		}
	} else if old.willTimer != nil && cleanStart {
		b.publishWill(batch, old, out) // the session ends before the will delay [MQTT-3.1.3-9]
	}
	stopTimer(&old.expiry)
	stopTimer(&old.willTimer)
}
