package mqtt

import (
	"time"

	"github.com/oncemq/oncemq/session"
)

// QueueFullPolicy is what a full session does to a new QoS 1 or 2 message (Options.QueueFull).
type QueueFullPolicy = session.QueueFullPolicy

// The policies of Options.QueueFull.
const (
	QueueFullRefuse     = session.RefuseWhenFull // refuse before acknowledging: 0x97, or 3.1.1 closed
	QueueFullDropNew    = session.DropNew        // acknowledge, drop for the full session, count
	QueueFullDropOldest = session.DropOldest     // acknowledge, drop the full session's oldest, count
)

// ErrQueueFull is returned by Publish for a QoS 1 or 2 message refused, before anything was stored,
// because a matching session's queue or the retained messages had no room (QueueFullRefuse).
var ErrQueueFull = session.ErrQueueFull

// ParseQueueFullPolicy reads "refuse", "drop-new" or "drop-oldest".
func ParseQueueFullPolicy(s string) (QueueFullPolicy, error) { return session.ParseQueueFullPolicy(s) }

// Defaults of the limits in Options that package mqtt enforces itself.
const (
	DefaultMaxWillSize     = 64 << 10
	DefaultMaxConnections  = 100000
	DefaultWriteQueueBytes = 4 << 20
	DefaultReadBudgetBytes = 64 << 20
	DefaultPacketTimeout   = 30 * time.Second
)

// hardConnectionCap is the number of connections past which a new one is closed as it is
// accepted, without reading its CONNECT: a tenth above the limit, so that clients between the two
// are told why (CONNACK 0x97) while a flood costs no more than its sockets.
func hardConnectionCap(limit int) int { return limit + limit/10 + 16 }

func (o *Options) setLimitDefaults() {
	// The session layer's limits (MaxQueued, MaxQueuedBytes, MaxSubscriptions, MaxSessions,
	// MaxRetained, MaxRetainedBytes) get their defaults there: a zero is passed on as it is.
	if o.MaxWillSize <= 0 {
		o.MaxWillSize = DefaultMaxWillSize
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.WriteQueueBytes <= 0 {
		o.WriteQueueBytes = DefaultWriteQueueBytes
	}
	if o.ReadBudgetBytes <= 0 {
		o.ReadBudgetBytes = DefaultReadBudgetBytes
	}
	if o.PacketTimeout <= 0 {
		o.PacketTimeout = DefaultPacketTimeout
	}
}
