package session

import (
	"log/slog"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
	"github.com/oncemq/oncemq/session/topic"
)

// Subscribe handles SUBSCRIBE: each filter is granted min(requested QoS, 2) and stored, SUBACK is
// sent once the subscriptions are committed, then the matching retained messages follow as the
// Retain Handling option asks [MQTT-3.3.1-9] [MQTT-3.3.1-10].
func (b *Broker) Subscribe(s *Session, c Conn, id uint16, reqs []inflight.SubscriptionRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return
	}
	batch := &inflight.Batch{}
	var out outbox
	codes := make([]byte, len(reqs))
	for i, sub := range reqs {
		switch {
		case !topic.ValidFilter(sub.Filter):
			codes[i] = byte(b.failCode(s, reason.TopicFilterInvalid))
			continue
		case topic.IsShared(sub.Filter):
			codes[i] = byte(b.failCode(s, reason.SharedSubscriptionsNotSupported))
			continue
		}
		sub.QoS = min(sub.QoS, 2)
		codes[i] = sub.QoS // granted QoS [MQTT-3.9.3-1]
		_, existed := s.subs[sub.Filter]
		if s.subs == nil {
			s.subs = make(map[string]inflight.SubscriptionRecord)
		}
		s.subs[sub.Filter] = sub // replaces an identical filter [MQTT-3.8.4-3]
		b.subs.Add(sub.Filter, s.ClientID, sub)
		if s.durable() {
			batch.PutSubscription(s.ClientID, sub)
		}
		if sub.RetainHandling == 0 || (sub.RetainHandling == 1 && !existed) {
			b.deliverRetained(batch, s, sub, &out)
		}
	}
	suback := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Suback}, PacketID: id, ReasonCodes: codes}
	b.submit(batch, func(err error) {
		if err != nil {
			b.log.Error("commit failed: subscribe not acknowledged", slog.String("client", s.ClientID), slog.Any("err", err))
			c.Close(reason.UnspecifiedError)
			return
		}
		c.Send(suback) // [MQTT-3.8.4-1]
		out.flush()
	})
}

// failCode is code for a 5.0 client and the one 3.1.1 refusal, Failure, for a 3.1.1 client.
func (b *Broker) failCode(s *Session, code reason.Code) reason.Code {
	if s.ProtocolVersion == 5 {
		return code
	}
	return reason.SubackFailure
}

// SubscriptionRequest is one filter of a SUBSCRIBE with its options.
type SubscriptionRequest = inflight.SubscriptionRecord
