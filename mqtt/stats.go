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
	Retained         int // retained messages (in the store; the $SYS ones are not counted)
	Subscriptions    int // subscriptions, one per session and filter

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
	// CommitLatency counts commits by how long each took, transaction and fsync.
	CommitLatency LatencyHistogram

	// The store's failures since start (each one the disk filling or an I/O error), and the heals:
	// the store reopened after a full disk (see Server.Readiness).
	StoreFailures uint64
	StoreHeals    uint64

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
	conns, eng, js := len(s.conns), s.eng, s.retired
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
	return Stats{
		Connections:          conns,
		Sessions:             bs.Sessions,
		SessionsOnline:       bs.SessionsOnline,
		InboundInFlight:      bs.InboundAwaitingPubrel,
		OutboundInFlight:     bs.OutboundInFlight,
		Queued:               bs.Queued,
		Retained:             bs.Retained,
		Subscriptions:        bs.Subscriptions,
		DroppedQueueFull:     s.metrics.QueueOverflow.Load(),
		DroppedExpired:       s.metrics.Expired.Load(),
		DroppedTooLarge:      s.metrics.TooLarge.Load(),
		NotAuthorized:        s.metrics.NotAuthorized.Load(),
		PublishRefused:       s.metrics.PublishRefused.Load(),
		NotOwner:             s.metrics.NotOwner.Load(),
		SessionsExpired:      s.metrics.SessionsExpired.Load(),
		DuplicatesByPacketID: s.metrics.DuplicatesByPacketID.Load(),
		DuplicatesByDedupID:  s.metrics.DuplicatesByDedupID.Load(),
		DedupIDs:             bs.DedupIDs,
		Commits:              js.Commits,
		Batches:              js.Batches,
		Records:              js.Ops,
		CommitFailures:       s.metrics.CommitFailures.Load(),
		CommitLatency:        LatencyHistogram(js.CommitLatency),
		StoreFailures:        s.storeFailures.Load(),
		StoreHeals:           s.heals.Load(),
		PacketsReceived:      s.traffic.packetsIn.Load(),
		PacketsSent:          s.traffic.packetsOut.Load(),
		PublishReceived:      s.traffic.publishIn.Load(),
		PublishSent:          s.traffic.publishOut.Load(),
		BytesReceived:        s.traffic.bytesIn.Load(),
		BytesSent:            s.traffic.bytesOut.Load(),
	}
}
