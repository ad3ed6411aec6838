package session

import (
	"github.com/oncemq/oncemq/inflight"
)

// match is what one session gets of one message after merging all its matching subscriptions.
type match struct {
	qos    byte
	subIDs []int
	retain bool
}

// route fans m out to every session with a matching subscription that may read it (Options.MayRead)
// and reports how many it was given to. Overlapping subscriptions of one session deliver once, at
// the highest granted QoS, with every Subscription Identifier [MQTT-3.3.4-2]. publisher is the
// client id of the publishing session, for No Local; "" for a message no client published.
// Caller holds b.mu.
func (b *Broker) route(batch *inflight.Batch, m *inflight.Message, publisher string, out *outbox) int {
	matches := make(map[string]*match)
	b.subs.Match(m.Topic, func(clientID, filter string, sub inflight.SubscriptionRecord) {
		if sub.NoLocal && publisher != "" && clientID == publisher { // [MQTT-3.8.3-3]
			return
		}
		mt := matches[clientID]
		if mt == nil {
			mt = &match{}
			matches[clientID] = mt
		}
		mt.qos = max(mt.qos, min(m.QoS, sub.QoS)) // [MQTT-3.8.4-8]
		if sub.Identifier > 0 {
			mt.subIDs = append(mt.subIDs, sub.Identifier)
		}
		if sub.RetainAsPublished && m.Retain { // [MQTT-3.3.1-12] [MQTT-3.3.1-13]
			mt.retain = true
		}
	})
	given := 0
	for clientID, mt := range matches {
		s := b.sessions[clientID]
		if s == nil || !b.mayRead(s, m.Topic) {
			continue
		}
		b.deliver(batch, s, m, mt.qos, mt.subIDs, mt.retain, out)
		given++
	}
	return given
}
