package mqtt

import (
	"time"

	"github.com/oncemq/oncemq/session"
)

// Stats is a snapshot of what the broker holds and has done since it started.
type Stats struct {
	Connections int // open network connections, CONNECT not yet done included
	// ConnectionsByListener is Connections by the address of the listener that accepted them; every
	// listener being served is there, with 0 when it has none.
	ConnectionsByListener map[string]int
	Accepted              uint64                // connections accepted since start
	Refused               map[ReasonCode]uint64 // CONNECTs refused since start, by CONNACK reason code
	// ClosedAtAccept counts connections closed as they were accepted, past the hard cap above
	// Options.MaxConnections.
	ClosedAtAccept   uint64
	Sessions         int   // sessions held, online or not
	SessionsOnline   int   // sessions with a connection
	InboundInFlight  int   // QoS 2 packet ids from clients awaiting PUBREL
	OutboundInFlight int   // QoS 1 and 2 packet ids to clients awaiting PUBACK, PUBREC or PUBCOMP
	Queued           int   // messages waiting in session queues
	QueuedBytes      int64 // bytes of message bodies held by sessions, queued or in flight (Options.MaxQueuedBytes)
	Retained         int   // retained messages (in the store; the $SYS ones are not counted)
	RetainedBytes    int64 // bytes of retained message bodies (Options.MaxRetainedBytes)
	Subscriptions    int   // subscriptions, one per session and filter
	// FullSessions names the sessions (client ids, sorted, at most 100) whose full queue turned a
	// message away since they last freed room: with QueueFullRefuse, the ones holding publishers
	// back.
	FullSessions []string

	// Messages dropped on purpose since start, by reason, and what was withheld from a reader.
	DroppedQueueFull uint64
	DroppedExpired   uint64
	DroppedTooLarge  uint64
	// DroppedUnreadable counts queued or in-flight messages whose body could not be read from
	// the data file to be sent (an I/O error, damage): each is also logged with its client.
	DroppedUnreadable uint64
	NotAuthorized     uint64 // deliveries the Authorizer's CanRead refused
	PublishRefused    uint64 // PUBLISHes the Authorizer's CanPublish refused (not routed)
	NotOwner          uint64 // CONNECTs refused: the client id's session belongs to another user
	SessionsExpired   uint64
	DroppedQoS0       uint64 // QoS 0 deliveries dropped at a full write queue (Options.WriteQueueBytes)
	NotRetained       uint64 // QoS 0 retained messages not kept: retained messages at their limit
	RefusedQueueFull  uint64 // QoS 1/2 PUBLISHes refused with 0x97: a matching queue, or the retained messages, full
	// Shared subscriptions: groups, messages waiting in their queues, and messages dropped: QoS 0
	// with no member online or waiting in a group whose last member left (DroppedSharedNoMember),
	// QoS 2 sent to a member whose session ended first (DroppedSharedMemberGone) [MQTT-4.8.2-5].
	SharedGroups, SharedQueued                     int
	DroppedSharedNoMember, DroppedSharedMemberGone uint64

	// PUBLISH packets since start, by QoS (index 0, 1, 2), and their payload bytes: received from
	// clients (resends included), and written to clients (resends with DUP included).
	Received, ReceivedBytes [3]uint64
	Sent, SentBytes         [3]uint64

	// Duplicate PUBLISHes answered and not routed, by what recognised them: a QoS 2 packet id
	// still awaiting PUBREL, or a dedup id in the window (Options.DedupProperty).
	DuplicatesByPacketID uint64
	DuplicatesByDedupID  uint64
	DedupIDs             int // dedup ids in the window

	Commits        uint64 // store commits (log records), each one fdatasync with NoSync unset
	Batches        uint64 // batches of changes submitted (each one a PUBLISH, an ack, a CONNECT...)
	Records        uint64 // records written
	CommitFailures uint64 // batches whose commit failed
	// CommitLatency counts commits by how long each took, transaction and fsync.
	CommitLatency LatencyHistogram

	// The store's failures since start (each one the disk filling or an I/O error), and the heals:
	// the store reopened after a full disk (see Server.Readiness).
	StoreFailures uint64
	StoreHeals    uint64
	// StoreFailed is true while the store takes no change: failed, being healed, or failed for good.
	StoreFailed bool
	// Recovery is how long the last opening of the state file took, reading it back included.
	Recovery time.Duration

	// What crossed the wire since start. A packet is counted when read whole, or when written.
	PacketsReceived uint64 // MQTT packets of every type read from clients
	PacketsSent     uint64 // MQTT packets of every type written to clients
	PublishReceived uint64 // PUBLISH packets read
	PublishSent     uint64 // PUBLISH packets written
	BytesReceived   uint64 // bytes of the packets read
	BytesSent       uint64 // bytes written

}

// Stats reports what the broker holds and has done. It takes the broker's lock briefly.
func (s *Server) Stats() Stats {
	byListener := s.connectionsByListener()
	s.mu.Lock()
	eng, js, recovery := s.eng, s.retired, s.recovery
	s.mu.Unlock()
	var bs session.Stats
	if eng != nil {
		bs = eng.broker.Stats()
		cur := eng.journal.Stats()
		js.Commits, js.Batches, js.Ops = js.Commits+cur.Commits, js.Batches+cur.Batches, js.Ops+cur.Ops
		for i := range js.CommitLatency {
			js.CommitLatency[i] += cur.CommitLatency[i]
		}
	}
	_, unavailable := s.engine()
	st := Stats{
		ConnectionsByListener: byListener,
		Sessions:              bs.Sessions,
		SessionsOnline:        bs.SessionsOnline,
		InboundInFlight:       bs.InboundAwaitingPubrel,
		OutboundInFlight:      bs.OutboundInFlight,
		Queued:                bs.Queued,
		QueuedBytes:           bs.QueuedBytes,
		Retained:              bs.Retained,
		Subscriptions:         bs.Subscriptions,
		RetainedBytes:         bs.RetainedBytes,
		FullSessions:          bs.FullSessions,
		NotRetained:           bs.RetainedFull,
		RefusedQueueFull:      bs.QueueRefused,
		ClosedAtAccept:        s.connsClosedAtAccept.Load(),
		DroppedQueueFull:      s.metrics.QueueOverflow.Load(),
		DroppedExpired:        s.metrics.Expired.Load(),
		DroppedTooLarge:       s.metrics.TooLarge.Load(),
		DroppedUnreadable:     s.metrics.Unreadable.Load(),
		NotAuthorized:         s.metrics.NotAuthorized.Load(),
		PublishRefused:        s.metrics.PublishRefused.Load(),
		NotOwner:              s.metrics.NotOwner.Load(),
		SessionsExpired:       s.metrics.SessionsExpired.Load(),
		DuplicatesByPacketID:  s.metrics.DuplicatesByPacketID.Load(),
		DuplicatesByDedupID:   s.metrics.DuplicatesByDedupID.Load(),
		DedupIDs:              bs.DedupIDs,
		Commits:               js.Commits,
		Batches:               js.Batches,
		Records:               js.Ops,
		CommitFailures:        s.metrics.CommitFailures.Load(),
		CommitLatency:         LatencyHistogram(js.CommitLatency),
		StoreFailures:         s.storeFailures.Load(),
		StoreHeals:            s.heals.Load(),
		StoreFailed:           unavailable != nil,
		Recovery:              recovery,
	}
	for _, n := range byListener {
		st.Connections += n
	}
	st.SharedGroups, st.SharedQueued = bs.SharedGroups, bs.SharedQueued
	st.DroppedSharedNoMember, st.DroppedSharedMemberGone = bs.SharedNoMember, bs.SharedMemberGone
	s.traffic.fill(&st)
	return st
}

// connectionsByListener counts the open connections by the listener that accepted them.
func (s *Server) connectionsByListener() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.listeners))
	for ln := range s.listeners {
		m[ln.Addr().String()] = 0
	}
	for c := range s.conns {
		m[c.listener.String()]++
	}
	return m
}
