package session

import "sync/atomic"

// Metrics counts what the broker dropped or refused on purpose, so that no drop is silent.
type Metrics struct {
	QueueOverflow   atomic.Uint64 // messages not queued because a session's queue was full
	Expired         atomic.Uint64 // messages dropped because their Message Expiry passed
	TooLarge        atomic.Uint64 // deliveries dropped: larger than the client's Maximum Packet Size
	NotAuthorized   atomic.Uint64 // deliveries Options.MayRead refused
	NotOwner        atomic.Uint64 // CONNECTs refused because the client id's session belongs to another user
	PublishRefused  atomic.Uint64 // 3.1.1 PUBLISHes refused as not authorized: acknowledged, not routed
	SessionsExpired atomic.Uint64 // sessions removed by Session Expiry
	CommitFailures  atomic.Uint64 // batches whose commit failed

	// Duplicate PUBLISHes answered and not routed, by what recognised them.
	DuplicatesByPacketID atomic.Uint64 // a QoS 2 packet id already awaiting PUBREL [MQTT-4.3.3-10]
	DuplicatesByDedupID  atomic.Uint64 // a dedup id in the window (DedupOptions)
	// QueueFullRefused counts QoS 1 and 2 PUBLISHes refused (0x97) because a matching session's
	// queue, or the retained messages, had no room (RefuseWhenFull).
	QueueFullRefused atomic.Uint64
	RetainedFull     atomic.Uint64 // QoS 0 messages routed but not retained: retained messages at their limit

	// Shared subscription messages dropped: QoS 0 with no member online, or waiting in a group
	// whose last member's subscription went (SharedNoMember); QoS 2 sent to a member whose session
	// ended before it completed [MQTT-4.8.2-5] (SharedMemberGone).
	SharedNoMember   atomic.Uint64
	SharedMemberGone atomic.Uint64
	Unreadable       atomic.Uint64 // queued or in-flight messages dropped: their body could not be read from the file
}

// DropReason says why a message was not delivered to a session it was meant for.
type DropReason string

// The reasons for a drop, each counted in Metrics and told to Options.OnDrop.
const (
	QueueFull DropReason = "queue-full" // the session's queue held Options.MaxQueued messages
	Expired   DropReason = "expired"    // the Message Expiry Interval passed before delivery
	TooLarge  DropReason = "too-large"  // larger than the client's Maximum Packet Size
	// RetainedFull: a QoS 0 message was routed but not retained, as the retained messages are at
	// their limit (Options.MaxRetained, MaxRetainedBytes); the client id is "".
	RetainedFull DropReason = "retained-full"
	// SharedNoMember: a shared subscription group had no member for the message: QoS 0 with no
	// member online, or a message waiting in a group whose last member unsubscribed or ended. The
	// client id is the group's filter, "$share/{group}/{filter}".
	SharedNoMember DropReason = "shared-no-member"
	// SharedMemberGone: a QoS 2 message was sent to a member of a shared subscription group whose
	// session ended before it completed; it is not sent to another member [MQTT-4.8.2-5]. The
	// client id is the group's filter.
	SharedMemberGone DropReason = "shared-member-gone"
	// Unreadable: the body of a queued or in-flight message could not be read from the file (an
	// I/O error, damage); the topic is "".
	Unreadable DropReason = "unreadable"
)

// dropped counts a message not delivered to clientID and tells Options.OnDrop. Caller holds b.mu.
func (b *Broker) dropped(clientID, topic string, why DropReason) {
	switch why {
	case QueueFull:
		b.Metrics.QueueOverflow.Add(1)
	case Expired:
		b.Metrics.Expired.Add(1)
	case TooLarge:
		b.Metrics.TooLarge.Add(1)
	case RetainedFull:
		b.Metrics.RetainedFull.Add(1)
	case SharedNoMember:
		b.Metrics.SharedNoMember.Add(1)
	case SharedMemberGone:
		b.Metrics.SharedMemberGone.Add(1)
	case Unreadable:
		b.Metrics.Unreadable.Add(1)
	}
	if b.opts.OnDrop != nil {
		b.opts.OnDrop(clientID, topic, why)
	}
}
