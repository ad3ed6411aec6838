package session

import (
	"bytes"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// Outgoing is one packet for a connection's writer, described rather than built: a PUBLISH is its
// message and the fields that differ per delivery, an acknowledgement its type, id and code. A
// packets.Packet is about 800 bytes, and copying one into the outbox and again into the write
// queue for every delivery and acknowledgement was a fifth of the broker's allocated bytes. Any
// other packet (CONNACK, SUBACK...) is carried whole in Other.
type Outgoing struct {
	Type   byte        // packets.Publish, Puback, Pubrec, Pubrel or Pubcomp; 0: Other
	QoS    byte        // PUBLISH
	Dup    bool        // PUBLISH
	Retain bool        // PUBLISH
	Code   reason.Code // PUBACK, PUBREC, PUBREL, PUBCOMP
	ID     uint16      // packet identifier; 0 for a QoS 0 PUBLISH
	// Expiry is a PUBLISH's Message Expiry Interval, the remaining lifetime of Msg in seconds
	// [MQTT-3.3.2-6]; 0: none [MQTT-3.3.2-5].
	Expiry uint32
	Msg    *inflight.Message // PUBLISH: topic, payload and the publisher's properties
	SubIDs []int             // PUBLISH: the Subscription Identifiers of the matching subscriptions
	Other  *packets.Packet
}

// PacketOf wraps a packet that has no compact form (CONNACK, SUBACK, UNSUBACK, PINGRESP...).
func PacketOf(pk packets.Packet) Outgoing {
	return Outgoing{Other: &pk}
}

// Kind is the packet type.
func (o *Outgoing) Kind() byte {
	if o.Type == 0 && o.Other != nil {
		return o.Other.FixedHeader.Type
	}
	return o.Type
}

// Packet builds the whole packet, for the codec and for tests. Topic Alias is never forwarded
// [MQTT-3.3.2-7]: the writer assigns its own.
func (o *Outgoing) Packet() packets.Packet {
	switch o.Type {
	case packets.Publish:
		props := o.Msg.Properties
		props.TopicAlias, props.TopicAliasFlag = 0, false
		props.SubscriptionIdentifier = o.SubIDs
		props.MessageExpiryInterval = o.Expiry
		return packets.Packet{
			FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: o.QoS, Dup: o.Dup, Retain: o.Retain},
			TopicName:   o.Msg.Topic,
			Payload:     o.Msg.Payload,
			PacketID:    o.ID,
			Properties:  props,
			Mods:        packets.Mods{AllowResponseInfo: true},
		}
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: o.Type}, PacketID: o.ID, ReasonCode: byte(o.Code)}
		if o.Type == packets.Pubrel {
			pk.FixedHeader.Qos = 1 // fixed header 0x62 [MQTT-3.6.1-1]
		}
		return pk
	}
	if o.Other != nil {
		return *o.Other
	}
	return packets.Packet{}
}

// Cost is what the packet counts against a connection's write queue (see PublishCost and
// Conn.Reserve); other packets count a fixed share, given by the connection.
func (o *Outgoing) Cost(other int) int {
	if o.Type == packets.Publish {
		return len(o.Msg.Payload) + len(o.Msg.Topic) + publishOverhead
	}
	if o.Other != nil && o.Other.FixedHeader.Type == packets.Publish {
		return PublishCost(o.Other)
	}
	return other
}

// ack describes a PUBACK, PUBREC, PUBREL or PUBCOMP.
func ack(typ byte, id uint16, code reason.Code) Outgoing {
	return Outgoing{Type: typ, ID: id, Code: code}
}

// publishPacket describes the PUBLISH that delivers m. Topic Alias is never forwarded; the Message
// Expiry Interval is the remaining lifetime [MQTT-3.3.2-6]; a message without one has none
// [MQTT-3.3.2-5].
func publishPacket(m *inflight.Message, id uint16, qos byte, dup, retain bool, subIDs []int, now int64) Outgoing {
	o := Outgoing{Type: packets.Publish, QoS: qos, Dup: dup, Retain: retain, ID: id, Msg: m, SubIDs: subIDs}
	if m.ExpiresAt != 0 {
		remaining := (m.ExpiresAt - now + 999_999_999) / 1_000_000_000
		o.Expiry = uint32(max(remaining, 1))
	}
	return o
}

// fits reports whether o, encoded for version, is within limit bytes (0: no limit)
// [MQTT-3.1.2-24].
func fits(o *Outgoing, version byte, limit uint32) bool {
	if limit == 0 {
		return true
	}
	pk := o.Packet()
	pk.ProtocolVersion = version
	var buf bytes.Buffer
	if err := pk.PublishEncode(&buf); err != nil {
		return false
	}
	return uint32(buf.Len()) <= limit
}
