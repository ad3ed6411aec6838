package mqtt

// Stats is a snapshot of what the broker holds and has done since it started.
type Stats struct {
	Connections      int // open network connections, CONNECT not yet done included
	Sessions         int // sessions held, online or not
	SessionsOnline   int // sessions with a connection
	InboundInFlight  int // QoS 2 packet ids from clients awaiting PUBREL
	OutboundInFlight int // QoS 1 and 2 packet ids to clients awaiting PUBACK, PUBREC or PUBCOMP
	Queued           int // messages waiting in session queues
	Retained         int // retained messages (in the store; the $SYS ones are not counted)
	Subscriptions    int // subscriptions, one per session and filter

	// Messages dropped on purpose since start, by reason, and what was withheld from a reader.
	DroppedQueueFull uint64
	DroppedExpired   uint64
	DroppedTooLarge  uint64
	NotAuthorized    uint64 // deliveries the Authorizer's CanRead refused
	SessionsExpired  uint64

	Commits        uint64 // store transactions committed, each one sync with NoSync unset
	Batches        uint64 // batches of changes submitted (each one a PUBLISH, an ack, a CONNECT...)
	Records        uint64 // records written
	CommitFailures uint64 // batches whose commit failed
	// CommitLatency counts commits by how long each took, transaction and fsync.
	CommitLatency LatencyHistogram

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
		NotAuthorized:    bs.NotAuthorized,
		SessionsExpired:  bs.SessionsExpired,
		Commits:          js.Commits,
		Batches:          js.Batches,
		Records:          js.Ops,
		CommitFailures:   bs.CommitFailures,
		Subscriptions:    bs.Subscriptions,
		CommitLatency:    LatencyHistogram(js.CommitLatency),
		PacketsReceived:  s.traffic.packetsIn.Load(),
		PacketsSent:      s.traffic.packetsOut.Load(),
		PublishReceived:  s.traffic.publishIn.Load(),
		PublishSent:      s.traffic.publishOut.Load(),
		BytesReceived:    s.traffic.bytesIn.Load(),
		BytesSent:        s.traffic.bytesOut.Load(),
	}
}
