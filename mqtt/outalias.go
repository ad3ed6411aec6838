package mqtt

import "github.com/mochi-mqtt/server/v2/packets"

// maxOutAliases bounds the topic aliases the broker assigns on one connection, whatever larger
// Topic Alias Maximum the client allows: each costs a map entry for the connection's life.
const maxOutAliases = 256

// outAliases are the topic aliases the broker assigned on one 5.0 connection, for the client's
// Topic Alias Maximum: 1 up to it, none when it is absent or 0 [MQTT-3.1.2-26] [MQTT-3.1.2-27]
// [MQTT-3.3.2-8]. The first PUBLISH to a topic carries the topic and a new alias, later ones an
// empty topic and the alias. Aliases live and die with the connection [MQTT-3.3.2-7]; a resend
// (DUP) never uses one, so that a message resent after a reconnect always carries its topic. Used
// by the writer only: no lock.
type outAliases struct {
	max    uint16
	topics map[string]uint16
}

// assign sets pk's alias, and empties its topic when the alias is known already; restore undoes
// it once pk is encoded, as the queued packet is the session's accounting of what was sent. isNew
// says the alias was assigned now (see forget).
func (a *outAliases) assign(pk *packets.Packet) (restore func(), isNew bool) {
	topic := pk.TopicName
	alias, known, isNew := a.pick(topic, pk.FixedHeader.Dup)
	if alias == 0 {
		return nil, false
	}
	props := &pk.Properties
	oldAlias, oldFlag := props.TopicAlias, props.TopicAliasFlag
	props.TopicAlias, props.TopicAliasFlag = alias, true
	if known {
		pk.TopicName = ""
	}
	return func() {
		pk.TopicName = topic
		props.TopicAlias, props.TopicAliasFlag = oldAlias, oldFlag
	}, isNew
}

// pick is the alias for a PUBLISH to topic: 0 for none (a resend, or every alias taken); known
// when the client has it already, so the topic may go empty; isNew when it was assigned now.
func (a *outAliases) pick(topic string, dup bool) (alias uint16, known, isNew bool) {
	if a.max == 0 || dup || topic == "" {
		return 0, false, false
	}
	alias, known = a.topics[topic]
	if known {
		return alias, true, false
	}
	if len(a.topics) >= int(a.max) {
		return 0, false, false // every alias is taken: the full topic, as without aliases
	}
	if a.topics == nil {
		a.topics = make(map[string]uint16)
	}
	alias = uint16(len(a.topics) + 1)
	a.topics[topic] = alias
	return alias, false, true
}

// forget takes back the alias just assigned to topic: the packet that carried it was not sent
// with it. Only the last alias assigned may be forgotten, so aliases stay 1..len(topics).
func (a *outAliases) forget(topic string) { delete(a.topics, topic) }
