package session

import (
	"errors"
	"log/slog"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/internal/failpoint"
	"github.com/oncemq/oncemq/session/reason"
)

// ErrReceiveMaximumExceeded: the client has more QoS 1 and 2 PUBLISHes unacknowledged than the broker's
// Receive Maximum; the connection must be closed with DISCONNECT 0x93.
var ErrReceiveMaximumExceeded = errors.New("receive maximum exceeded")

// Publish handles a PUBLISH from the client of s on conn c. m is the message (owned by the
// broker from now on; Seq is assigned here); id is its packet identifier (0 for QoS 0).
//
// QoS 2, first time for id: the inbound id, the fan-out and the retained update are committed in
// one batch, then PUBREC is sent [MQTT-4.3.3-8]. QoS 2, id already awaiting PUBREL (DUP or not):
// PUBREC again with the same reason code, after every earlier commit, and no routing
// [MQTT-4.3.3-10]. QoS 1: fan-out committed, then PUBACK [MQTT-4.3.2-4]. QoS 0: routed.
// Once the journal has failed, QoS 1 and 2 are refused (see Refuse) with 0x80.
//
// inboundQuota is how many QoS 2 ids may await PUBREL at once: the broker's Receive Maximum less
// the QoS 1 PUBACKs the connection owes for earlier PUBLISHes. A new QoS 1 or QoS 2 PUBLISH
// beyond it returns ErrReceiveMaximumExceeded and changes nothing [MQTT-3.3.4-8].
func (b *Broker) Publish(s *Session, c Conn, m *inflight.Message, id uint16, inboundQuota int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return nil // taken over: this connection no longer owns the session
	}
	if m.QoS == 2 {
		if code, ok := s.inbound.Lookup(id); ok {
			b.Metrics.DuplicatesByPacketID.Add(1)
			b.repeatPubrec(c, id, reason.Code(code))
			return nil
		}
	}
	if m.QoS > 0 && s.inbound.Len() >= inboundQuota {
		return ErrReceiveMaximumExceeded
	}
	if m.QoS > 0 && b.journal.Err() != nil {
		// The store failed: refuse rather than acknowledge what cannot be kept.
		b.refuse(s, c, m.QoS, id, reason.UnspecifiedError)
		return nil
	}
	// Exactly-once past the session: a copy of a message accepted under the same dedup id
	// (session/dedup.go).
	dedupKey := b.dedupKey(s, m)
	if b.dedupRepeat(s, c, m, id, dedupKey) {
		return nil
	}
	b.accept(s, c, m, id, dedupKey)
	return nil
}

// accept routes m, updates the retained message and, for QoS 2, records id as awaiting PUBREL, all
// in one batch with m's dedup id (dedupKey, "" for none); PUBACK or PUBREC and the deliveries go
// out once it is committed. Caller holds b.mu.
func (b *Broker) accept(s *Session, c Conn, m *inflight.Message, id uint16, dedupKey string) {
	if m.QoS > 0 && !b.retainFits(m) {
		b.refuseForQuota(s, c, m, id, "")
		return
	}
	m.Seq = b.journal.NextSeq()
	batch := &inflight.Batch{}
	var out outbox
	matched, full := b.route(batch, m, s.ClientID, m.QoS > 0 && b.opts.QueueFull == RefuseWhenFull, &out)
	if full != nil {
		b.refuseForQuota(s, c, m, id, full.ClientID)
		return
	}
	if b.retainFits(m) {
		b.retain(batch, m)
	} else {
		b.dropped("", m.Topic, RetainedFull) // QoS 0: routed, not retained
	}
	code := reason.Success
	if matched == 0 && s.protocolVersion == 5 {
		code = reason.NoMatchingSubscribers
	}
	// The acknowledgement is built in the callback, from its type: a packet captured by the
	// closure would be a heap allocation of the whole packet struct for every message.
	var replyType byte
	switch m.QoS {
	case 1:
		replyType = packets.Puback
	case 2:
		s.inbound.Add(id, byte(code))
		if s.durable() {
			batch.PutInbound(s.ClientID, id, byte(code))
		}
		replyType = packets.Pubrec
	}
	if m.QoS > 0 {
		b.dedupRemember(batch, dedupKey, code)
	}
	if m.QoS == 0 && batch.Len() == 0 {
		// Nothing to commit (no retained change): a QoS 0 message promises nothing, so it goes
		// out now instead of behind the commits under way. It may overtake a QoS 1/2 message of
		// the same publisher still committing; ordering is only promised per QoS [MQTT-4.6.0-5].
		out.flush()
		return
	}
	sends := out // by value: the closure carries it, out itself stays on the stack
	b.submitCounted(batch, func(err error) {
		if b.failed(err) {
			b.log.Error("commit failed: publish not acknowledged", slog.String("client", s.ClientID), slog.Any("err", err))
			c.Close(reason.UnspecifiedError)
			return
		}
		if replyType != 0 {
			failpoint.BeforeSend(replyType, 0, code)
			c.Send(ack(replyType, id, code))
		}
		sends.flush()
	})
}

// refuseForQuota refuses m, which the queue of session full (or, with full "", the retained
// messages) has no room for: 5.0 PUBACK or PUBREC 0x97, 3.1.1 the connection closed. Nothing was
// routed and the id does not enter the inbound table [MQTT-4.3.3-9]. Caller holds b.mu.
func (b *Broker) refuseForQuota(s *Session, c Conn, m *inflight.Message, id uint16, full string) {
	b.Metrics.QueueFullRefused.Add(1)
	if b.opts.OnRefuse != nil {
		b.opts.OnRefuse(full, m.Topic)
	}
	b.refuse(s, c, m.QoS, id, reason.QuotaExceeded)
}

// repeatPubrec answers a QoS 2 PUBLISH whose id already awaits PUBREL: PUBREC with the code the
// first one had, and nothing routed [MQTT-4.3.3-10]. It waits for every earlier commit, since the
// first PUBREC's state may still be on its way to the disk. Caller holds b.mu.
func (b *Broker) repeatPubrec(c Conn, id uint16, code reason.Code) {
	b.submit(nil, func(err error) {
		if err != nil {
			// The first PUBREC's state may never have reached the disk: promise nothing.
			c.Close(reason.UnspecifiedError)
			return
		}
		c.Send(ack(packets.Pubrec, id, code))
	})
}
