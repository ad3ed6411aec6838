package mqtt

import "time"

// Stats is a snapshot of what the broker holds and has done since it started.
type Stats struct {
	Connections int // open network connections, CONNECT not yet done included
	// ConnectionsByListener is Connections by the address of the listener that accepted them; every
	// listener being served is there, with 0 when it has none.
	ConnectionsByListener map[string]int
	Accepted              uint64                // connections accepted since start
	Refused               map[ReasonCode]uint64 // CONNECTs refused since start, by CONNACK reason code
	Sessions              int                   // sessions held, online or not
	SessionsOnline        int                   // sessions with a connection
	InboundInFlight       int                   // QoS 2 packet ids from clients awaiting PUBREL
	OutboundInFlight      int                   // QoS 1 and 2 packet ids to clients awaiting PUBACK, PUBREC or PUBCOMP
	Queued                int                   // messages waiting in session queues
	QueuedBytes           int                   // their payloads, in bytes
	Retained              int                   // retained messages

	// Messages dropped on purpose since start, by reason, and what was withheld from a reader.
	DroppedQueueFull uint64
	DroppedExpired   uint64
	DroppedTooLarge  uint64
	NotAuthorized    uint64 // deliveries the Authorizer's CanRead refused
	SessionsExpired  uint64
	// QoS 0 deliveries dropped because a connection's outgoing queue was full (a client that does
	// not read).
	DroppedQoS0Overflow uint64

	// PUBLISH packets since start, by QoS (index 0, 1, 2), and their payload bytes: received from
	// clients (resends included), and written to clients (resends with DUP included).
	Received, ReceivedBytes [3]uint64
	Sent, SentBytes         [3]uint64

	Commits        uint64 // store transactions committed, each one sync with NoSync unset
	Batches        uint64 // batches of changes submitted (each one a PUBLISH, an ack, a CONNECT...)
	Records        uint64 // records written
	CommitFailures uint64 // batches whose commit failed
	// StoreFailed is true once a commit failed: the journal refuses every change until a restart.
	StoreFailed bool
	// Recovery is how long New took to open the state file and read it back.
	Recovery time.Duration
}

// Stats reports what the broker holds and has done. It takes the broker's lock briefly.
func (s *Server) Stats() Stats {
	byListener := s.connectionsByListener()
	bs := s.broker.Stats()
	js := s.journal.Stats()
	st := Stats{
		ConnectionsByListener: byListener,
		Sessions:              bs.Sessions,
		SessionsOnline:        bs.SessionsOnline,
		InboundInFlight:       bs.InboundAwaitingPubrel,
		OutboundInFlight:      bs.OutboundInFlight,
		Queued:                bs.Queued,
		QueuedBytes:           bs.QueuedBytes,
		Retained:              bs.Retained,
		DroppedQueueFull:      bs.QueueOverflow,
		DroppedExpired:        bs.Expired,
		DroppedTooLarge:       bs.TooLarge,
		NotAuthorized:         bs.NotAuthorized,
		SessionsExpired:       bs.SessionsExpired,
		Commits:               js.Commits,
		Batches:               js.Batches,
		Records:               js.Ops,
		CommitFailures:        bs.CommitFailures,
		StoreFailed:           s.journal.Err() != nil,
		Recovery:              s.recovery,
	}
	for _, n := range byListener {
		st.Connections += n
	}
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
