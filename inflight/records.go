package inflight

// OutboundState is where an outbound QoS 1 or 2 delivery stands.
type OutboundState byte

const (
	// PublishSent: the PUBLISH was sent (or is about to be) and awaits PUBACK or PUBREC.
	PublishSent OutboundState = 1
	// PubrelSent: a PUBREC < 0x80 arrived and PUBREL was sent; awaits PUBCOMP. The message itself
	// is no longer needed [MQTT-4.3.3-5].
	PubrelSent OutboundState = 2
)

// SessionRecord is the durable part of a session, bucket sessions, key client id.
type SessionRecord struct {
	ClientID        string
	ProtocolVersion byte   // 4 (3.1.1) or 5
	ExpiryInterval  uint32 // seconds; 0xFFFFFFFF never expires. Only sessions with > 0 are stored.
	DisconnectedAt  int64  // unix nanoseconds; 0 while connected
	Will            *Will  // nil when the session has no will
	// Owner is the username the session belongs to ("" for an anonymous client). nil in a record
	// written before sessions had owners: such a session belongs to the first identity that
	// resumes it. Added compatibly: the record is JSON, and an absent key decodes as nil.
	Owner *string `json:",omitempty"`
}

// Will is the will message kept with a session [MQTT-3.1.2-7].
type Will struct {
	Message *Message // Seq is 0: a will is stored inline, not in bucket msgs
	Delay   uint32   // Will Delay Interval, seconds
}

// SubscriptionRecord is one subscription of a session, bucket subs, key client id, filter.
type SubscriptionRecord struct {
	Filter            string
	QoS               byte // granted QoS
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte
	Identifier        int // Subscription Identifier, 0 when none
}

// OutboundRecord is one outbound in-flight delivery, bucket out, key client id, packet id.
type OutboundRecord struct {
	PacketID uint16
	State    OutboundState
	QoS      byte   // delivery QoS (1 or 2)
	Order    uint64 // per-session delivery order; resend order on resume
	MsgSeq   uint64 // 0 once State is PubrelSent (the message is released)
	SubIDs   []int  // subscription identifiers to send with the PUBLISH
	Retain   bool   // retain flag to send with the PUBLISH
}

// QueuedRecord is one message waiting for a session (offline, or no send quota), bucket queue, key
// client id, Order.
type QueuedRecord struct {
	Order  uint64
	QoS    byte // delivery QoS (1 or 2)
	MsgSeq uint64
	SubIDs []int
	Retain bool
}

// InboundRecord is one QoS 2 packet id received and answered with PUBREC, awaiting PUBREL, bucket in,
// key client id, packet id. Reason is the PUBREC reason code sent, so that a resend is answered the
// same way [MQTT-4.3.3-10].
type InboundRecord struct {
	PacketID uint16
	Reason   byte
}
