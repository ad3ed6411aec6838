package mqtt

// Stats is a snapshot of what the broker holds and has done since it started.
type Stats struct {
	Connections      int   // open network connections, CONNECT not yet done included
	Sessions         int   // sessions held, online or not
	SessionsOnline   int   // sessions with a connection
	InboundInFlight  int   // QoS 2 packet ids from clients awaiting PUBREL
	OutboundInFlight int   // QoS 1 and 2 packet ids to clients awaiting PUBACK, PUBREC or PUBCOMP
	Queued           int   // messages waiting in session queues
	Retained         int   // retained messages
	QueuedBytes      int64 // bytes of message bodies held by sessions, queued or in flight (Options.MaxQueuedBytes)
	RetainedBytes    int64 // bytes of retained message bodies (Options.MaxRetainedBytes)
	// FullSessions names the sessions (client ids, sorted, at most 100) whose full queue turned a
	// message away since they last freed room: with QueueFullRefuse, the ones holding publishers
	// back.
	FullSessions []string

	// Messages dropped on purpose since start, by reason, and what was withheld from a reader.
	DroppedQueueFull uint64
	DroppedExpired   uint64
	DroppedTooLarge  uint64
	DroppedQoS0      uint64 // QoS 0 deliveries dropped at a full write queue (Options.WriteQueueBytes)
	NotRetained      uint64 // QoS 0 retained messages not kept: retained messages at their limit
	RefusedQueueFull uint64 // QoS 1/2 PUBLISHes refused with 0x97: a matching queue, or the retained messages, full
	// ClosedAtAccept counts connections closed as they were accepted, past the hard cap above
	// Options.MaxConnections.
	ClosedAtAccept  uint64
	NotAuthorized   uint64 // deliveries the Authorizer's CanRead refused
	SessionsExpired uint64

	Commits        uint64 // store transactions committed, each one sync with NoSync unset
	Batches        uint64 // batches of changes submitted (each one a PUBLISH, an ack, a CONNECT...)
	Records        uint64 // records written
	CommitFailures uint64 // batches whose commit failed
}

// Stats reports what the broker holds and has done. It takes the broker's lock briefly.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	conns := len(s.conns)
	s.mu.Unlock()
	bs := s.broker.Stats()
	js := s.journal.Stats()
	return Stats{
		Connections:      conns,
		Sessions:         bs.Sessions,
		SessionsOnline:   bs.SessionsOnline,
		InboundInFlight:  bs.InboundAwaitingPubrel,
		OutboundInFlight: bs.OutboundInFlight,
		Queued:           bs.Queued,
		Retained:         bs.Retained,
		DroppedQueueFull: bs.QueueOverflow,
		DroppedExpired:   bs.Expired,
		DroppedTooLarge:  bs.TooLarge,
		DroppedQoS0:      s.droppedQoS0.Load(),
		NotRetained:      bs.RetainedFull,
		RefusedQueueFull: bs.QueueRefused,
		ClosedAtAccept:   s.connsClosedAtAccept.Load(),
		QueuedBytes:      bs.QueuedBytes,
		RetainedBytes:    bs.RetainedBytes,
		FullSessions:     bs.FullSessions,
		NotAuthorized:    bs.NotAuthorized,
		SessionsExpired:  bs.SessionsExpired,
		Commits:          js.Commits,
		Batches:          js.Batches,
		Records:          js.Ops,
		CommitFailures:   bs.CommitFailures,
	}
}
