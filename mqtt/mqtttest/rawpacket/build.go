// Package rawpacket builds, encodes and reads single MQTT packets for oncemq's raw test clients:
// mqtttest's Client, which scripts the protocol packet by packet in tests, and the torture
// checker's transport, which runs inside the oncemq binary. Both write exactly the packets they
// build and read exactly what the broker sends, so they share one builder and one framing here,
// on top of the broker's own codec layer.
//
// The package does not import testing: the oncemq binary links it, and a product binary must not
// link the test framework.
package rawpacket

import "github.com/mochi-mqtt/server/v2/packets"

// ConnectOptions are the fields of a CONNECT that the raw clients set.
type ConnectOptions struct {
	ClientID string
	// CleanStart is 5.0's Clean Start and 3.1.1's CleanSession.
	CleanStart bool
	// SessionExpiry is the 5.0 Session Expiry Interval in seconds; 0: absent, so the session ends
	// with the connection. Ignored in 3.1.1.
	SessionExpiry uint32
	// ReceiveMaximum is the client's 5.0 Receive Maximum; 0: absent (65535).
	ReceiveMaximum uint16
	// KeepAlive is in seconds; 0: none.
	KeepAlive uint16
}

// Connect builds a CONNECT for protocol version (4: 3.1.1, 5: 5.0).
func Connect(version byte, o ConnectOptions) packets.Packet {
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: version,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			ClientIdentifier: o.ClientID,
			Clean:            o.CleanStart,
			Keepalive:        o.KeepAlive,
		},
	}
	if version == 5 {
		if o.SessionExpiry > 0 {
			pk.Properties.SessionExpiryInterval = o.SessionExpiry
			pk.Properties.SessionExpiryIntervalFlag = true
		}
		pk.Properties.ReceiveMaximum = o.ReceiveMaximum
	}
	return pk
}

// Publish builds a PUBLISH. id is left out of the encoding at QoS 0.
func Publish(topic string, qos byte, id uint16, payload []byte, dup bool) packets.Packet {
	return packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos, Dup: dup},
		TopicName:   topic,
		PacketID:    id,
		Payload:     payload,
	}
}

// Ack builds a PUBACK, PUBREC, PUBREL (fixed header 0x62 [MQTT-3.6.1-1]) or PUBCOMP. The reason
// code is written in 5.0 when it is not 0x00, and never in 3.1.1.
func Ack(typ byte, id uint16, reason byte) packets.Packet {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: typ}, PacketID: id, ReasonCode: reason}
	if typ == packets.Pubrel {
		pk.FixedHeader.Qos = 1
	}
	return pk
}

// Subscribe builds a SUBSCRIBE (fixed header 0x82 [MQTT-3.8.1-1]) for one filter.
func Subscribe(id uint16, filter string, qos byte) packets.Packet {
	return packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		PacketID:    id,
		Filters:     packets.Subscriptions{{Filter: filter, Qos: qos}},
	}
}

// Pingreq builds a PINGREQ.
func Pingreq() packets.Packet {
	return packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}}
}

// Disconnect builds a DISCONNECT; the reason code is written in 5.0 only.
func Disconnect(reason byte) packets.Packet {
	return packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ReasonCode: reason}
}
