package mqtt

import "github.com/oncemq/oncemq/session"

// Stats is a snapshot of what the broker holds and has done since it started.
type Stats struct {
	Connections      int // open network connections, CONNECT not yet done included
	Sessions         int // sessions held, online or not
	SessionsOnline   int // sessions with a connection
	InboundInFlight  int // QoS 2 packet ids from clients awaiting PUBREL
	OutboundInFlight int // QoS 1 and 2 packet ids to clients awaiting PUBACK, PUBREC or PUBCOMP
	Queued           int // messages waiting in session queues
	Retained         int // retained messages

	// Messages dropped on purpose since start, by reason, and what was withheld from a reader.
	DroppedQueueFull uint64
	DroppedExpired   uint64
	DroppedTooLarge  uint64
	NotAuthorized    uint64 // deliveries the Authorizer's CanRead refused
	PublishRefused   uint64 // PUBLISHes the Authorizer's CanPublish refused (not routed)
	NotOwner         uint64 // CONNECTs refused: the client id's session belongs to another user
	SessionsExpired  uint64

	// Duplicate PUBLISHes answered and not routed, by what recognised them: a QoS 2 packet id
	// still awaiting PUBREL, or a dedup id in the window (Options.DedupProperty).
	DuplicatesByPacketID uint64
	DuplicatesByDedupID  uint64
	DedupIDs             int // dedup ids in the window

	Commits        uint64 // store transactions committed, each one sync with NoSync unset
	Batches        uint64 // batches of changes submitted (each one a PUBLISH, an ack, a CONNECT...)
	Records        uint64 // records written
	CommitFailures uint64 // batches whose commit failed

	// The store's failures since start (each one the disk filling or an I/O error), and the heals:
	// the store reopened after a full disk (see Server.Readiness).
	StoreFailures uint64
	StoreHeals    uint64
}

// Stats reports what the broker holds and has done. It takes the broker's lock briefly.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	conns, eng, js := len(s.conns), s.eng, s.retired
	s.mu.Unlock()
	var bs session.Stats
	if eng != nil {
		bs = eng.broker.Stats()
		cur := eng.journal.Stats()
		js.Commits, js.Batches, js.Ops = js.Commits+cur.Commits, js.Batches+cur.Batches, js.Ops+cur.Ops
	}
	return Stats{
		Connections:          conns,
		Sessions:             bs.Sessions,
		SessionsOnline:       bs.SessionsOnline,
		InboundInFlight:      bs.InboundAwaitingPubrel,
		OutboundInFlight:     bs.OutboundInFlight,
		Queued:               bs.Queued,
		Retained:             bs.Retained,
		DroppedQueueFull:     s.metrics.QueueOverflow.Load(),
		DroppedExpired:       s.metrics.Expired.Load(),
		DroppedTooLarge:      s.metrics.TooLarge.Load(),
		NotAuthorized:        s.metrics.NotAuthorized.Load(),
		PublishRefused:       s.metrics.PublishRefused.Load(),
		NotOwner:             s.metrics.NotOwner.Load(),
		SessionsExpired:      s.metrics.SessionsExpired.Load(),
		Commits:              js.Commits,
		Batches:              js.Batches,
		Records:              js.Ops,
		CommitFailures:       s.metrics.CommitFailures.Load(),
		StoreFailures:        s.storeFailures.Load(),
		StoreHeals:           s.heals.Load(),
		DuplicatesByPacketID: s.metrics.DuplicatesByPacketID.Load(),
		DuplicatesByDedupID:  s.metrics.DuplicatesByDedupID.Load(),
		DedupIDs:             bs.DedupIDs,
	}
}
