package session

import "slices"

// Stats is a snapshot of what the broker holds and what it counted since start.
type Stats struct {
	Sessions              int // sessions held, connected or not
	SessionsOnline        int // sessions a connection holds
	InboundAwaitingPubrel int // QoS 2 ids received and answered with PUBREC, awaiting PUBREL
	OutboundInFlight      int // QoS 1/2 deliveries awaiting PUBACK, PUBREC or PUBCOMP
	Queued                int // messages waiting in session queues
	Subscriptions         int // subscriptions, one per session and filter
	Retained              int // retained messages
	DedupIDs              int // dedup ids in the window
	RetainedBytes         int64
	QueuedBytes           int64 // bytes of message bodies held by sessions, queued or in flight
	// FullSessions are the client ids of the sessions that turned a message away for want of room
	// since they last freed some, at most MaxFullSessions of them, sorted.
	FullSessions []string

	// The counters of Metrics.
	QueueOverflow   uint64
	Expired         uint64
	TooLarge        uint64
	NotAuthorized   uint64
	SessionsExpired uint64
	CommitFailures  uint64
	NotOwner        uint64
	PublishRefused  uint64

	DuplicatesByPacketID uint64
	DuplicatesByDedupID  uint64
	QueueRefused         uint64 // Metrics.QueueFullRefused
	RetainedFull         uint64

	// Shared subscriptions: the groups, the messages waiting in their queues (not in Queued), and
	// the shared messages dropped (Metrics.SharedNoMember, Metrics.SharedMemberGone).
	SharedGroups, SharedQueued       int
	SharedNoMember, SharedMemberGone uint64
}

// MaxFullSessions bounds Stats.FullSessions.
const MaxFullSessions = 100

// Stats counts, under the lock, what the broker holds. It visits every session: call it for a
// metrics scrape, not per message.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Stats{
		Sessions:        len(b.sessions),
		Subscriptions:   b.subs.Len(),
		Retained:        len(b.retained),
		QueueOverflow:   b.Metrics.QueueOverflow.Load(),
		Expired:         b.Metrics.Expired.Load(),
		TooLarge:        b.Metrics.TooLarge.Load(),
		NotAuthorized:   b.Metrics.NotAuthorized.Load(),
		SessionsExpired: b.Metrics.SessionsExpired.Load(),
		CommitFailures:  b.Metrics.CommitFailures.Load(),
		NotOwner:        b.Metrics.NotOwner.Load(),
		PublishRefused:  b.Metrics.PublishRefused.Load(),

		DedupIDs:             b.dedup.window.Len(),
		DuplicatesByPacketID: b.Metrics.DuplicatesByPacketID.Load(),
		DuplicatesByDedupID:  b.Metrics.DuplicatesByDedupID.Load(),
		QueueRefused:         b.Metrics.QueueFullRefused.Load(),
		RetainedFull:         b.Metrics.RetainedFull.Load(),
		RetainedBytes:        b.retainedBytes,
	}
	for _, s := range b.sessions {
		if s.connected() {
			st.SessionsOnline++
		}
		st.InboundAwaitingPubrel += s.inbound.Len()
		st.OutboundInFlight += s.outbound.Len()
		st.Queued += len(s.queue)
		st.QueuedBytes += s.heldBytes
		if s.turnedAway && len(st.FullSessions) < MaxFullSessions {
			st.FullSessions = append(st.FullSessions, s.ClientID)
		}
	}
	slices.Sort(st.FullSessions)
	b.sharedStats(&st)
	return st
}
