package session

import (
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// NeverExpire is the Session Expiry Interval meaning "never" (0xFFFFFFFF).
const NeverExpire = 0xFFFFFFFF

// Session is the state the broker keeps for one client id. Every field is guarded by Broker.mu,
// except ClientID, which never changes.
type Session struct {
	ClientID string
	// Username is the identity the session belongs to: the username of the CONNECT that created it
	// ("" for an anonymous client). A CONNECT from another identity is refused (ErrNotOwner). It is
	// stored in the session record, so Options.MayRead sees it for an offline session after a
	// restart too.
	Username string
	// owned is false only for a session restored from a record written before sessions had owners:
	// the first identity that resumes it becomes its owner.
	owned bool

	protocolVersion byte   // 4 or 5, of the latest connection
	expiryInterval  uint32 // seconds; 0 ends the session with its connection

	conn           Conn  // nil while no connection holds the session
	disconnectedAt int64 // unix nanoseconds, while conn is nil

	inbound  inflight.Inbound  // QoS 2 ids from the client awaiting PUBREL
	outbound inflight.Outbound // QoS 1/2 ids to the client awaiting acks
	queue    []*queued         // messages waiting for the connection or for send quota
	order    uint64            // last delivery order handed out (outbound and queue share it)

	heldBytes  int64 // bytes of the message bodies in queue and outbound (Options.MaxQueuedBytes)
	turnedAway bool  // a message was refused or dropped for want of room since s last freed some

	subs map[string]inflight.SubscriptionRecord // by filter

	will      *inflight.Will
	willTimer *time.Timer // pending delayed will
	expiry    *time.Timer // pending session expiry while offline

	// Per connection, not session state [MQTT-4.9.0-1].
	receiveMax    int             // client's Receive Maximum
	maxPacketSize uint32          // client's Maximum Packet Size, 0 unlimited
	noProblemInfo bool            // Request Problem Information 0: no user property on acks [MQTT-3.1.2-29]
	sent          int             // QoS 1/2 PUBLISHes (and PUBRELs) outstanding on this connection
	unsent        map[uint16]bool // outbound entries not yet resent on this connection
}

// queued is one message waiting in a session's queue: its index entry, and its body while the
// session pins it (pinned).
type queued struct {
	order  uint64
	qos    byte
	msg    *inflight.Handle
	body   *inflight.Message // nil: in the file, read when sent (Broker.body)
	subIDs []int
	retain bool
}

// durable reports whether the session outlives its connection and so is kept in the journal.
// Caller holds Broker.mu.
func (s *Session) durable() bool { return s.expiryInterval > 0 }

// connected reports whether a connection holds the session. Caller holds Broker.mu.
func (s *Session) connected() bool { return s.conn != nil }

// record is the session's durable record. Caller holds Broker.mu.
func (s *Session) record() inflight.SessionRecord {
	owner := s.Username // a copy: the batch is encoded later, by the committer
	return inflight.SessionRecord{
		ClientID:        s.ClientID,
		ProtocolVersion: s.protocolVersion,
		ExpiryInterval:  s.expiryInterval,
		DisconnectedAt:  s.disconnectedAt,
		Will:            s.will,
		Owner:           &owner,
	}
}

// mayConnect reports whether a CONNECT that authenticated as username may take s: only its owner
// may, or anyone while it has none. Caller holds Broker.mu.
func (s *Session) mayConnect(username string) bool {
	return !s.owned || s.Username == username
}

// pinned returns m if s keeps the bodies of its messages in memory, nil if it leaves them in the
// file. A session that is not durable has no file to read them from; a connected one is sending
// them soon, and a live message should not be read back from the file it was just written to. A
// durable session that is offline keeps none (unpin). Caller holds Broker.mu.
func (s *Session) pinned(m *inflight.Message) *inflight.Message {
	if !s.durable() || s.connected() {
		return m
	}
	return nil
}

// unpin lets go of the bodies s holds, when it goes offline: they are in the file, or in a batch
// not yet committed, which keeps them until its commit. Caller holds Broker.mu; s is durable.
func (s *Session) unpin() {
	for _, q := range s.queue {
		q.body = nil
	}
	for _, e := range s.outbound.InOrder() {
		e.Body = nil
	}
}

// nextOrder hands out the next delivery order. Caller holds Broker.mu.
func (s *Session) nextOrder() uint64 {
	s.order++
	return s.order
}

// release drops the session's durable reference to m. Caller holds Broker.mu.
func (s *Session) release(batch *inflight.Batch, m *inflight.Handle) {
	if m != nil && s.durable() && m.Unref() {
		batch.DeleteMessage(m.Seq)
	}
}
