package inflight

// Batch is an ordered list of changes to durable state that is committed atomically. The zero value
// is an empty batch; an empty batch is still useful as a barrier: its done callback runs after every
// batch submitted before it has been committed.
type Batch struct {
	ops []op
}

type opKind byte

const (
	opPutSession opKind = iota + 1
	opDeleteSession
	opPutSubscription
	opDeleteSubscription
	opPutInbound
	opDeleteInbound
	opPutOutbound
	opDeleteOutbound
	opPutQueued
	opDeleteQueued
	opPutMessage
	opDeleteMessage
	opPutRetained
	opDeleteRetained
	opPutDedup
	opDeleteDedup
	opPutShared
	opDeleteShared
)

type op struct {
	kind     opKind
	clientID string
	session  *SessionRecord
	sub      *SubscriptionRecord
	filter   string
	packetID uint16
	reason   byte
	out      *OutboundRecord
	queued   *QueuedRecord
	order    uint64
	msg      *Message
	seq      uint64
	topic    string // the topic, or the dedup key of opDeleteDedup
	dedup    *DedupRecord
	shared   *SharedRecord
}

// Len is the number of changes in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// PutSession stores or replaces a session record.
func (b *Batch) PutSession(rec SessionRecord) {
	b.ops = append(b.ops, op{kind: opPutSession, clientID: rec.ClientID, session: &rec})
}

// DeleteSession removes a session and everything keyed by its client id: subscriptions, inbound and
// outbound entries, queue. Messages are reference-counted by the caller (see Message.Unref).
func (b *Batch) DeleteSession(clientID string) {
	b.ops = append(b.ops, op{kind: opDeleteSession, clientID: clientID})
}

// PutSubscription stores or replaces one subscription of a session.
func (b *Batch) PutSubscription(clientID string, sub SubscriptionRecord) {
	b.ops = append(b.ops, op{kind: opPutSubscription, clientID: clientID, sub: &sub})
}

// DeleteSubscription removes one subscription of a session.
func (b *Batch) DeleteSubscription(clientID, filter string) {
	b.ops = append(b.ops, op{kind: opDeleteSubscription, clientID: clientID, filter: filter})
}

// PutInbound records that a QoS 2 PUBLISH with this id was accepted and answered with reason.
func (b *Batch) PutInbound(clientID string, packetID uint16, reason byte) {
	b.ops = append(b.ops, op{kind: opPutInbound, clientID: clientID, packetID: packetID, reason: reason})
}

// DeleteInbound frees an inbound id (PUBREL received).
func (b *Batch) DeleteInbound(clientID string, packetID uint16) {
	b.ops = append(b.ops, op{kind: opDeleteInbound, clientID: clientID, packetID: packetID})
}

// PutOutbound stores or replaces an outbound in-flight entry.
func (b *Batch) PutOutbound(clientID string, rec OutboundRecord) {
	b.ops = append(b.ops, op{kind: opPutOutbound, clientID: clientID, out: &rec})
}

// DeleteOutbound frees an outbound id (PUBACK, PUBCOMP, PUBREC >= 0x80).
func (b *Batch) DeleteOutbound(clientID string, packetID uint16) {
	b.ops = append(b.ops, op{kind: opDeleteOutbound, clientID: clientID, packetID: packetID})
}

// PutQueued appends a message to a session's queue.
func (b *Batch) PutQueued(clientID string, rec QueuedRecord) {
	b.ops = append(b.ops, op{kind: opPutQueued, clientID: clientID, queued: &rec})
}

// DeleteQueued removes a queue entry (delivered, expired or dropped).
func (b *Batch) DeleteQueued(clientID string, order uint64) {
	b.ops = append(b.ops, op{kind: opDeleteQueued, clientID: clientID, order: order})
}

// PutMessage stores a message under its Seq. The message must not change afterwards.
func (b *Batch) PutMessage(m *Message) {
	b.ops = append(b.ops, op{kind: opPutMessage, msg: m, seq: m.Seq})
}

// DeleteMessage removes a message no durable entry refers to any more.
func (b *Batch) DeleteMessage(seq uint64) {
	b.ops = append(b.ops, op{kind: opDeleteMessage, seq: seq})
}

// PutRetained stores the retained message of m.Topic.
func (b *Batch) PutRetained(m *Message) {
	b.ops = append(b.ops, op{kind: opPutRetained, msg: m, topic: m.Topic})
}

// DeleteRetained clears the retained message of a topic.
func (b *Batch) DeleteRetained(topic string) {
	b.ops = append(b.ops, op{kind: opDeleteRetained, topic: topic})
}

// Written returns the messages the batch stores (PutMessage), in order. Any other implementation of
// session.Journal needs it: its LoadMessage must return the bodies of the batches it was given.
func (b *Batch) Written() []*Message {
	var msgs []*Message
	for i := range b.ops {
		if b.ops[i].kind == opPutMessage {
			msgs = append(msgs, b.ops[i].msg)
		}
	}
	return msgs
}
