package session

import (
	"errors"
	"fmt"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
)

// QueueFullPolicy says what happens to a QoS 1 or 2 message for a session whose queue is at its
// limit (Options.MaxQueued messages or Options.MaxQueuedBytes bytes).
type QueueFullPolicy int

const (
	// RefuseWhenFull refuses the PUBLISH before it is acknowledged (5.0: PUBACK or PUBREC 0x97; 3.1.1:
	// the connection is closed), for every matching session at once: nothing acknowledged is ever
	// dropped for want of room, and a retry cannot duplicate. The default.
	RefuseWhenFull QueueFullPolicy = iota
	// DropNew acknowledges the PUBLISH and drops it for the full session only, counted.
	DropNew
	// DropOldest acknowledges the PUBLISH and makes room in the full session by dropping its oldest
	// queued messages, counted.
	DropOldest
)

// ParseQueueFullPolicy reads "refuse", "drop-new" or "drop-oldest".
func ParseQueueFullPolicy(s string) (QueueFullPolicy, error) {
	switch s {
	case "refuse":
		return RefuseWhenFull, nil
	case "drop-new":
		return DropNew, nil
	case "drop-oldest":
		return DropOldest, nil
	}
	return 0, fmt.Errorf("queue-full policy %q: want refuse, drop-new or drop-oldest", s)
}

// ErrQueueFull is given to PublishLocal's done when a QoS 1 or 2 message was refused because a
// matching session's queue is full (RefuseWhenFull).
var ErrQueueFull = errors.New("session: a matching session's queue is full")

// ErrTooManySessions is given to Connect's done for a new session past Options.MaxSessions.
var ErrTooManySessions = errors.New("session: too many sessions")

// Defaults of the limits in Options.
const (
	DefaultMaxQueued        = 10000
	DefaultMaxQueuedBytes   = 64 << 20
	DefaultMaxSubscriptions = 1000
	DefaultMaxSessions      = 200000
	DefaultMaxRetained      = 100000
	DefaultMaxRetainedBytes = 256 << 20
)

// messageBytes is what a message body costs a session that holds it: payload and topic.
func messageBytes(m *inflight.Message) int64 {
	if m == nil {
		return 0
	}
	return int64(len(m.Payload) + len(m.Topic))
}

// PublishCost is the bytes a PUBLISH counts against a connection's write queue (Conn.Reserve):
// its body, and a fixed share for the packet's own memory.
func PublishCost(pk *packets.Packet) int {
	return len(pk.Payload) + len(pk.TopicName) + publishOverhead
}

// publishOverhead is the share of a PUBLISH's own memory in PublishCost.
const publishOverhead = 256

// hold counts m against s's bytes; unhold gives them back and clears the full mark, as there is
// room again. The bytes are counted whether the body is in memory or in the file. Caller holds b.mu.
func (s *Session) hold(m *inflight.Handle) {
	if m != nil {
		s.heldBytes += m.Size()
	}
}

func (s *Session) unhold(m *inflight.Handle) {
	if m != nil {
		s.heldBytes -= m.Size()
	}
	s.turnedAway = false
}

// hasRoom reports whether s can take m at QoS 1 or 2 without passing its limits. A session that
// holds nothing takes any message, however large, so that one big message cannot block it forever.
// Caller holds b.mu.
func (b *Broker) hasRoom(s *Session, m *inflight.Message) bool {
	if len(s.queue) >= b.opts.MaxQueued {
		return false
	}
	return s.heldBytes == 0 || s.heldBytes+messageBytes(m) <= b.opts.MaxQueuedBytes
}

// makeRoom drops s's oldest queued messages until m fits (DropOldest), and reports whether it
// does. Caller holds b.mu.
func (b *Broker) makeRoom(batch *inflight.Batch, s *Session, m *inflight.Message) bool {
	if b.opts.QueueFull != DropOldest {
		return false
	}
	for len(s.queue) > 0 && !b.hasRoom(s, m) {
		q := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if s.durable() {
			batch.DeleteQueued(s.ClientID, q.order)
		}
		s.unhold(q.msg)
		s.release(batch, q.msg)
		b.dropped(s.ClientID, b.topicOf(q), QueueFull)
	}
	return b.hasRoom(s, m)
}

// retainFits reports whether m may become the retained message of its topic within
// Options.MaxRetained and Options.MaxRetainedBytes. Caller holds b.mu.
func (b *Broker) retainFits(m *inflight.Message) bool {
	if !m.Retain || len(m.Payload) == 0 {
		return true
	}
	old, replaces := b.retained[m.Topic]
	if !replaces && len(b.retained) >= b.opts.MaxRetained {
		return false
	}
	return b.retainedBytes-messageBytes(old)+messageBytes(m) <= b.opts.MaxRetainedBytes
}

// setLimitDefaults fills the zero limits of o.
func (o *Options) setLimitDefaults() {
	if o.MaxQueued <= 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxRetained <= 0 {
		o.MaxRetained = DefaultMaxRetained
	}
	if o.MaxRetainedBytes <= 0 {
		o.MaxRetainedBytes = DefaultMaxRetainedBytes
	}
}
