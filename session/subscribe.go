package session

import (
	"log/slog"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
	"github.com/oncemq/oncemq/session/topic"
)

// SubscriptionRequest is one filter of a SUBSCRIBE with its options.
type SubscriptionRequest struct {
	Filter            string
	QoS               byte // requested QoS
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte
	Identifier        int // Subscription Identifier, 0 when none
	// Refused, when 0x80 or more, is the caller's refusal of this filter (not authorized, quota
	// exceeded...): the filter is not subscribed, no retained message is sent for it, and SUBACK
	// carries the code (3.1.1: 0x80, its only refusal). Below 0x80 it means nothing.
	Refused reason.Code
}

// Subscribe handles SUBSCRIBE: each filter is granted min(requested QoS, 2) and stored, SUBACK is
// sent once the subscriptions are committed, then the matching retained messages follow as the
// Retain Handling option asks [MQTT-3.3.1-9] [MQTT-3.3.1-10]. A filter that is invalid, shared or
// refused by the caller is not subscribed and SUBACK says why.
//
// It returns the reason codes SUBACK carries, one per request in order (granted QoS or refusal),
// or nil if c no longer holds s.
func (b *Broker) Subscribe(s *Session, c Conn, id uint16, reqs []SubscriptionRequest) []reason.Code {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return nil
	}
	batch := &inflight.Batch{}
	var out outbox
	codes, suback := b.subscribeAll(batch, s, id, reqs, &out)
	b.submit(batch, func(err error) {
		if err != nil {
			b.log.Error("commit failed: subscribe not acknowledged", slog.String("client", s.ClientID), slog.Any("err", err))
			c.Close(reason.UnspecifiedError)
			return
		}
		c.Send(PacketOf(suback)) // [MQTT-3.8.4-1]
		out.flush()
	})
	return codes
}

// subscribeAll stores or refuses the filters of one SUBSCRIBE and returns their codes and the
// SUBACK that carries them. Caller holds b.mu.
func (b *Broker) subscribeAll(batch *inflight.Batch, s *Session, id uint16, reqs []SubscriptionRequest, out *outbox) ([]reason.Code, packets.Packet) {
	codes := make([]reason.Code, len(reqs))
	suback := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Suback}, PacketID: id,
		ReasonCodes: make([]byte, len(reqs))}
	for i, req := range reqs {
		codes[i] = b.subscribe(batch, s, req, out)
		suback.ReasonCodes[i] = byte(codes[i])
	}
	return codes, suback
}

// subscribe stores one filter of a SUBSCRIBE, or refuses it, and returns its SUBACK code. Caller
// holds b.mu.
func (b *Broker) subscribe(batch *inflight.Batch, s *Session, req SubscriptionRequest, out *outbox) reason.Code {
	switch {
	case !topic.ValidFilter(req.Filter):
		return b.failCode(s, reason.TopicFilterInvalid)
	case req.Refused.IsFailure():
		return b.failCode(s, req.Refused)
	}
	sub := inflight.SubscriptionRecord{Filter: req.Filter, QoS: min(req.QoS, 2), NoLocal: req.NoLocal,
		RetainAsPublished: req.RetainAsPublished, RetainHandling: req.RetainHandling, Identifier: req.Identifier}
	_, existed := s.subs[sub.Filter]
	if !existed && len(s.subs) >= b.opts.MaxSubscriptions {
		return b.failCode(s, reason.QuotaExceeded)
	}
	if s.subs == nil {
		s.subs = make(map[string]inflight.SubscriptionRecord)
	}
	s.subs[sub.Filter] = sub // replaces an identical filter [MQTT-3.8.4-3]
	b.indexSub(s, sub)
	if s.durable() {
		batch.PutSubscription(s.ClientID, sub)
	}
	if topic.IsShared(sub.Filter) {
		// Retained messages are not sent on a shared subscription; the group's waiting messages
		// are, after the SUBACK (kickShared).
	} else if sub.RetainHandling == 0 || (sub.RetainHandling == 1 && !existed) {
		b.deliverRetained(batch, s, sub, out)
	}
	return reason.Code(sub.QoS) // granted QoS [MQTT-3.9.3-1]
}

// failCode is code for a 5.0 client and the one 3.1.1 refusal, Failure, for a 3.1.1 client.
// Caller holds b.mu.
func (b *Broker) failCode(s *Session, code reason.Code) reason.Code {
	if s.protocolVersion == 5 {
		return code
	}
	return reason.SubackFailure
}
