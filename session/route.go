package session

import (
	"github.com/oncemq/oncemq/inflight"
)

// match is what one session gets of one message after merging all its matching subscriptions.
type match struct {
	qos    byte
	subIDs []int
	retain bool
	s      *Session // the session, once it is known to exist and to be allowed to read
}

// route fans m out to every session with a matching subscription that may read it (Options.MayRead)
// and reports how many it was given to. Overlapping subscriptions of one session deliver once, at
// the highest granted QoS, with every Subscription Identifier [MQTT-3.3.4-2]. publisher is the
// client id of the publishing session, for No Local; "" for a message no client published.
//
// With refuse set (a QoS 1 or 2 PUBLISH under RefuseWhenFull), a message that would overflow the
// queue of any session it is for is given to none of them: route returns that session and changes
// nothing, so that the publisher can be refused and retry without a duplicate. Caller holds b.mu.
func (b *Broker) route(batch *inflight.Batch, m *inflight.Message, publisher string, refuse bool, out *outbox) (given int, full *Session) {
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
	for clientID, mt := range matches {
		s := b.sessions[clientID]
		if s == nil || !b.mayRead(s, m.Topic) {
			delete(matches, clientID)
			continue
		}
		mt.s = s
		if refuse && mt.qos > 0 && !b.hasRoom(s, m) {
			s.turnedAway = true
			return 0, s
		}
	}
	groups := b.sharedMatches(m.Topic)
	if refuse && m.QoS > 0 {
		if g := b.sharedFull(groups, m); g != nil {
			return 0, g
		}
	}
	for _, mt := range matches {
		b.deliver(batch, mt.s, m, mt.qos, mt.subIDs, mt.retain, out)
	}
	return len(matches) + b.routeShared(batch, groups, m, out), nil
}
