package session

import (
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/topic"
)

// retain updates the retained message of m's topic if m has the retain flag: an empty payload
// clears it [MQTT-3.3.1-10], anything else replaces it [MQTT-3.3.1-5]. Caller holds b.mu.
func (b *Broker) retain(batch *inflight.Batch, m *inflight.Message) {
	if !m.Retain {
		return
	}
	if len(m.Payload) == 0 {
		if old, ok := b.retained[m.Topic]; ok {
			b.retainedBytes -= messageBytes(old)
			delete(b.retained, m.Topic)
			batch.DeleteRetained(m.Topic)
		}
		return
	}
	b.retainedBytes += messageBytes(m) - messageBytes(b.retained[m.Topic])
	b.retained[m.Topic] = m
	batch.PutRetained(m)
}

// deliverRetained sends s the retained messages matching filter that it may read
// (Options.MayRead), with the retain flag set [MQTT-3.3.1-9], at min(message QoS, granted QoS).
// Expired ones are deleted [MQTT-3.3.2-5]. The volatile retained messages ($SYS) follow, at QoS 0.
// Caller holds b.mu.
func (b *Broker) deliverRetained(batch *inflight.Batch, s *Session, sub inflight.SubscriptionRecord, out *outbox) {
	var subIDs []int
	if sub.Identifier > 0 {
		subIDs = []int{sub.Identifier}
	}
	now := b.now().UnixNano()
	for name, m := range b.retained {
		if !topic.Match(sub.Filter, name) {
			continue
		}
		if m.Expired(now) {
			b.retainedBytes -= messageBytes(m)
			delete(b.retained, name)
			batch.DeleteRetained(name)
			continue
		}
		if !b.mayRead(s, name) {
			continue
		}
		b.deliver(batch, s, m, min(m.QoS, sub.QoS), subIDs, true, out)
	}
	b.deliverVolatile(s, sub.Filter, subIDs, out)
}
