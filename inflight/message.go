package inflight

import (
	"github.com/mochi-mqtt/server/v2/packets"
)

// Message is an application message as the broker owns it after accepting a PUBLISH: its body. It is
// stored once (bucket msgs, key Seq, with its index entry in msgidx) and referenced, through its
// Handle, by the queue and outbound entries of every session it was routed to.
type Message struct {
	Seq        uint64             // journal-wide sequence, the key in bucket msgs; assigned by Journal.NextSeq
	Topic      string             // the full topic name (never an alias)
	Payload    []byte             // owned copy
	QoS        byte               // QoS it was published with
	Retain     bool               // retain flag it was published with
	Properties packets.Properties // PUBLISH properties to forward (5.0): user properties, content type...
	Created    int64              // unix nanoseconds when the broker accepted it
	ExpiresAt  int64              // unix nanoseconds after which it is no longer delivered; 0 never

	handle *Handle // its index entry, made by the first Handle call
}

// Ref counts one more durable reference. It reports whether the message still has to be written,
// that is whether this is the first durable reference and the caller must add PutMessage to its
// batch.
func (m *Message) Ref() (mustWrite bool) {
	return m.Handle().Ref()
}

// Unref drops one durable reference. It reports whether that was the last one, in which case the
// caller must add DeleteMessage to its batch.
func (m *Message) Unref() (mustDelete bool) {
	return m.Handle().Unref()
}

// Expired reports whether the message's expiry has passed at now (unix nanoseconds).
func (m *Message) Expired(now int64) bool {
	return m.ExpiresAt != 0 && now >= m.ExpiresAt
}

// Clone returns a copy of m's fields with no references; Seq is kept, the caller usually replaces
// it. The payload and properties are shared: messages are immutable once accepted.
func (m *Message) Clone() *Message {
	return &Message{Seq: m.Seq, Topic: m.Topic, Payload: m.Payload, QoS: m.QoS, Retain: m.Retain,
		Properties: m.Properties, Created: m.Created, ExpiresAt: m.ExpiresAt}
}
