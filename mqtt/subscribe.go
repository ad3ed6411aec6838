package mqtt

import (
	"strings"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/reason"
	"github.com/oncemq/oncemq/session/topic"
)

// handleSubscribe turns a SUBSCRIBE into subscription requests for the session layer. A filter the
// Authorizer refuses is answered 0x87 (3.1.1: 0x80) and not subscribed.
func (c *conn) handleSubscribe(pk *packets.Packet) error {
	reqs, err := c.subscriptionRequests(pk)
	if err != nil {
		return err
	}
	codes := c.eng.broker.Subscribe(c.sess, c, pk.PacketID, reqs)
	c.subscribeEvent(reqs, codes)
	return nil
}

// subscriptionRequests validates a SUBSCRIBE and asks the Authorizer about each filter.
func (c *conn) subscriptionRequests(pk *packets.Packet) ([]session.SubscriptionRequest, error) {
	if code := pk.SubscribeValidate(); code != packets.CodeSuccess {
		return nil, &protocolError{code: reason.Code(code.Code), msg: "invalid SUBSCRIBE: " + code.Reason}
	}
	reqs := make([]session.SubscriptionRequest, len(pk.Filters))
	for i, f := range pk.Filters {
		if f.RetainHandling > 2 {
			return nil, protocolViolation("retain handling 3") // [MQTT-3.8.3-5]
		}
		if f.NoLocal && topic.IsShared(f.Filter) {
			return nil, protocolViolation("No Local on a shared subscription") // [MQTT-3.8.3-4]
		}
		reqs[i] = session.SubscriptionRequest{Filter: f.Filter, QoS: f.Qos, NoLocal: f.NoLocal,
			RetainAsPublished: f.RetainAsPublished, RetainHandling: f.RetainHandling, Identifier: f.Identifier}
		if az := c.srv.opts.Authorizer; az != nil && !az.CanSubscribe(c.client(), authorizedFilter(f.Filter)) {
			reqs[i].Refused = reason.NotAuthorized
		}
	}
	return reqs, nil
}

// subscribeEvent tells the Subscribe event the SUBACK codes of a SUBSCRIBE's filters.
func (c *conn) subscribeEvent(reqs []session.SubscriptionRequest, codes []reason.Code) {
	ev := c.srv.opts.Events.Subscribe
	if ev == nil {
		return
	}
	filters := make([]string, len(reqs))
	for i := range reqs {
		filters[i] = reqs[i].Filter
	}
	ev(c.client(), filters, codes)
}

// handleUnsubscribe removes the session's subscriptions to the filters; UNSUBACK follows the commit.
func (c *conn) handleUnsubscribe(pk *packets.Packet) error {
	if code := pk.UnsubscribeValidate(); code != packets.CodeSuccess {
		return &protocolError{code: reason.Code(code.Code), msg: "invalid UNSUBSCRIBE: " + code.Reason}
	}
	filters := make([]string, len(pk.Filters))
	for i, f := range pk.Filters {
		filters[i] = f.Filter
	}
	c.eng.broker.Unsubscribe(c.sess, c, pk.PacketID, filters)
	return nil
}

// authorizedFilter is what the Authorizer is asked about for filter: for a shared subscription,
// $share/{group}/{filter}, the filter after the share name, since that is what it reads; the
// filter itself otherwise (an invalid one is refused later anyway).
func authorizedFilter(filter string) string {
	if !topic.IsShared(filter) {
		return filter
	}
	_, rest, _ := strings.Cut(strings.TrimPrefix(filter, "$share/"), "/")
	return rest
}
