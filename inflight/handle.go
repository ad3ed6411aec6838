package inflight

import "sync/atomic"

// Handle is what the broker keeps in memory of one stored message: its index entry. Every queue
// and outbound entry that refers to the message shares one Handle, which counts their durable
// references; the body (topic, payload, properties) is not in it. A body is in memory only while
// an entry pins it (a live message being fanned out, a session that is not durable or is
// connected), in Journal's body cache, or in a batch not yet committed; otherwise it is read from
// the file when it is about to be sent (Journal.LoadMessage). A Handle is 32 bytes, so a million
// queued messages cost 32 MB of handles instead of their bodies.
type Handle struct {
	Seq       uint64 // the message's sequence, its key in buckets msgs and msgidx
	ExpiresAt int64  // unix nanoseconds after which it is no longer delivered; 0 never
	Payload   uint32 // payload bytes
	Topic     uint16 // topic bytes

	refs    atomic.Int32 // durable references (queue and outbound entries of durable sessions)
	written atomic.Bool  // a PutMessage for it has been submitted and not deleted
}

// Ref counts one more durable reference. It reports whether the message still has to be written,
// that is whether this is the first durable reference and the caller must add PutMessage to its
// batch.
func (h *Handle) Ref() (mustWrite bool) {
	h.refs.Add(1)
	return h.written.CompareAndSwap(false, true)
}

// Unref drops one durable reference. It reports whether that was the last one, in which case the
// caller must add DeleteMessage to its batch.
func (h *Handle) Unref() (mustDelete bool) {
	if h.refs.Add(-1) > 0 {
		return false
	}
	return h.written.CompareAndSwap(true, false)
}

// Expired reports whether the message's expiry has passed at now (unix nanoseconds).
func (h *Handle) Expired(now int64) bool {
	return h.ExpiresAt != 0 && now >= h.ExpiresAt
}

// Handle returns m's index entry, made at the first call: every session m is routed to shares it.
// Callers serialise the first call (the session layer calls it under its lock).
func (m *Message) Handle() *Handle {
	if m.handle == nil {
		x := indexOf(m)
		m.handle = x.handle(m.Seq)
	}
	return m.handle
}

// Size is the payload and topic bytes: what holding the message costs a session's queue.
func (h *Handle) Size() int64 {
	return int64(h.Payload) + int64(h.Topic)
}
