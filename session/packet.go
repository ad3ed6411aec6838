package session

import (
	"bytes"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// ack builds a PUBACK, PUBREC, PUBREL or PUBCOMP.
func ack(typ byte, id uint16, code reason.Code) packets.Packet {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: typ}, PacketID: id, ReasonCode: byte(code)}
	if typ == packets.Pubrel {
		pk.FixedHeader.Qos = 1 // fixed header 0x62 [MQTT-3.6.1-1]
	}
	return pk
}

// publishPacket builds the PUBLISH that delivers m. Topic Alias is never forwarded; the Message
// Expiry Interval is the remaining lifetime [MQTT-3.3.2-6]; a message without one has none
// [MQTT-3.3.2-5].
func publishPacket(m *inflight.Message, id uint16, qos byte, dup, retain bool, subIDs []int, now int64) packets.Packet {
	props := m.Properties
	props.TopicAlias, props.TopicAliasFlag = 0, false
	props.SubscriptionIdentifier = subIDs
	props.MessageExpiryInterval = 0
	if m.ExpiresAt != 0 {
		remaining := (m.ExpiresAt - now + 999_999_999) / 1_000_000_000
		props.MessageExpiryInterval = uint32(max(remaining, 1))
	}
	return packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos, Dup: dup, Retain: retain},
		TopicName:   m.Topic,
		Payload:     m.Payload,
		PacketID:    id,
		Properties:  props,
		Mods:        packets.Mods{AllowResponseInfo: true},
	}
}

// fits reports whether pk, encoded for version, is within limit bytes (0: no limit)
// [MQTT-3.1.2-24].
func fits(pk packets.Packet, version byte, limit uint32) bool {
	if limit == 0 {
		return true
	}
	pk.ProtocolVersion = version
	var buf bytes.Buffer
	if err := pk.PublishEncode(&buf); err != nil {
		return false
	}
	return uint32(buf.Len()) <= limit
}
