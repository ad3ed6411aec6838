package mqtt_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// rawPublish builds a PUBLISH by hand: fixed header byte, topic bytes as given (not checked), an
// id when qos bits say so, and payload. version 5 adds an empty property list.
func rawPublish(v byte, header byte, topic []byte, id uint16, payload []byte) []byte {
	var body bytes.Buffer
	body.Write([]byte{byte(len(topic) >> 8), byte(len(topic))})
	body.Write(topic)
	if header&0x06 != 0 {
		body.Write([]byte{byte(id >> 8), byte(id)})
	}
	if v == v5 {
		body.WriteByte(0)
	}
	body.Write(payload)
	return frame(header, body.Bytes())
}

// frame prefixes body with header and its minimal Remaining Length.
func frame(header byte, body []byte) []byte {
	return append(append([]byte{header}, varint(len(body))...), body...)
}

// varint encodes n as a minimal Variable Byte Integer.
func varint(n int) []byte {
	var out []byte
	for {
		b := byte(n % 128)
		n /= 128
		if n > 0 {
			b |= 0x80
		}
		out = append(out, b)
		if n == 0 {
			return out
		}
	}
}

// [MQTT-4.13.1-1] (G1, G9-G11, G13, A2, E8, H12, H14): each malformed packet or protocol error
// after CONNECT closes that connection, in 5.0 with DISCONNECT and the right reason code, in 3.1.1
// without a word; nothing of it is delivered, and the other clients keep working.
func TestMalformedPacketsCloseTheConnection_MQTT_4_13_1_1(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		const maxPacket = 1024
		b := mqtttest.StartBroker(t, mqtttest.WithMaxPacketSize(maxPacket))
		watcher, ack := connectDurable(t, b, v, "watcher")
		if v == v5 && ack.Properties.MaximumPacketSize != maxPacket {
			t.Fatalf("CONNACK Maximum Packet Size %d, want %d", ack.Properties.MaximumPacketSize, maxPacket)
		}
		watcher.SubscribeOK(t, 1, "#", 2)
		bystander := connectClean(t, b, v, "bystander")

		cases := []struct {
			name  string
			bytes []byte
			codes []byte // acceptable 5.0 DISCONNECT reason codes
		}{
			{"truncated PUBLISH topic [MQTT-1.5.4-1]", frame(0x32, []byte{0x00, 0x0A, 'a', 'b'}), []byte{0x81}},
			{"truncated PUBREL", []byte{0x62, 0x01, 0x00}, []byte{0x81}},
			{"PUBREL with flags 0000 [MQTT-3.6.1-1]", []byte{0x60, 0x02, 0x00, 0x01}, []byte{0x81}},
			{"PUBREC with flags 0001 [MQTT-2.1.3-1]", []byte{0x51, 0x02, 0x00, 0x01}, []byte{0x81}},
			{"PUBLISH with QoS 3 [MQTT-3.3.1-4]", rawPublish(v, 0x36, []byte("bad/qos3"), 1, []byte("x")), []byte{0x81}},
			{"packet larger than Maximum Packet Size", rawPublish(v, 0x32, []byte("bad/big"), 1, make([]byte, 2*maxPacket)), []byte{0x95}},
			{"Remaining Length 80 80 80 80 00 [MQTT-1.5.5-1]", []byte{0x32, 0x80, 0x80, 0x80, 0x80, 0x00}, []byte{0x81}},
			{"Remaining Length 80 00 [MQTT-1.5.5-1]", []byte{0xC0, 0x80, 0x00}, []byte{0x81}},
			{"topic not UTF-8 [MQTT-1.5.4-1]", rawPublish(v, 0x32, []byte{'b', 0xFF, 0xFE}, 1, []byte("x")), []byte{0x81}},
			{"topic with a surrogate [MQTT-1.5.4-1]", rawPublish(v, 0x32, []byte{'b', 0xED, 0xA0, 0x80}, 1, []byte("x")), []byte{0x81}},
			{"topic with U+0000 [MQTT-1.5.4-2]", rawPublish(v, 0x32, []byte("bad\x00t"), 1, []byte("x")), []byte{0x81}},
			{"QoS 1 PUBLISH with id 0 [MQTT-2.2.1-3]", rawPublish(v, 0x32, []byte("bad/id0"), 0, []byte("x")), []byte{0x81, 0x82}},
			{"QoS 2 PUBLISH with id 0 [MQTT-2.2.1-3]", rawPublish(v, 0x34, []byte("bad/id0"), 0, []byte("x")), []byte{0x81, 0x82}},
			{"wildcard + in topic name [MQTT-3.3.2-2]", rawPublish(v, 0x34, []byte("bad/+"), 1, []byte("x")), []byte{0x82, 0x90}},
			{"wildcard # in topic name [MQTT-3.3.2-2]", rawPublish(v, 0x34, []byte("bad/#"), 1, []byte("x")), []byte{0x82, 0x90}},
			{"second CONNECT [MQTT-3.1.0-2]", mustEncode(t, mqtttest.ConnectPacket(v, "bad", true, 0), v), []byte{0x82}},
			{"CONNACK from a client", []byte{0x20, 0x02, 0x00, 0x00}, []byte{0x81, 0x82}},
		}
		if v == v5 {
			// (G17, inferred) a PUBREC reason code not in Table 3-5.
			cases = append(cases, struct {
				name  string
				bytes []byte
				codes []byte
			}{"PUBREC with reason 0x05 [MQTT-3.5.2-1]", []byte{0x50, 0x03, 0x00, 0x01, 0x05}, []byte{0x81, 0x82}})
		}
		for i, tc := range cases {
			c := connectClean(t, b, v, fmt.Sprintf("bad-%d", i))
			c.WriteRaw(tc.bytes)
			t.Run(tc.name, func(t *testing.T) {
				c.ExpectDisconnect(t, tc.codes...)
			})
			// The broker goes on: the next message is the watcher's next delivery, so nothing of
			// the bad packet was routed.
			ok := fmt.Sprintf("ok-%d", i)
			publishQoS1(t, bystander, "good/t", uint16(i+1), ok)
			p := watcher.ExpectPublish(t, "good/t", 1, ok)
			watcher.Puback(p.PacketID)
		}
		watcher.ExpectNothing(t, nothing)
		bystander.Ping(t)
	})
}

// [MQTT-3.1.0-2] (G3): a second CONNECT is a protocol error (DISCONNECT 0x82) that does not reset
// the session.
func TestSecondConnectKeepsSession_MQTT_3_1_0_2(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		c, _ := connectDurable(t, b, v, "twice")
		c.SubscribeOK(t, 1, "twice/t", 1)
		c.SendConnect("twice", true, 0)
		c.ExpectDisconnect(t, 0x82)

		c = resume(t, b, v, "twice")
		pub := connectClean(t, b, v, "pub")
		publishQoS1(t, pub, "twice/t", 1, "still subscribed")
		p := c.ExpectPublish(t, "twice/t", 1, "still subscribed")
		c.Puback(p.PacketID)
	})
}

// [MQTT-3.1.0-1] (G2): the first packet must be CONNECT; anything else closes the connection with
// no CONNACK and no DISCONNECT.
func TestFirstPacketNotConnect_MQTT_3_1_0_1(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"PINGREQ", []byte{0xC0, 0x00}},
		{"QoS 2 PUBLISH", rawPublish(v311, 0x34, []byte("a/b"), 1, []byte("x"))},
		{"PUBREL", []byte{0x62, 0x02, 0x00, 0x01}},
		{"garbage", []byte{0x00, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := b.Dial(t, v5)
			c.WriteRaw(tc.bytes)
			c.ExpectClosed(t)
		})
	}
	connectClean(t, b, v5, "after").Ping(t)
}

// rawConnect builds a CONNECT with the given protocol name and level and an empty client id.
func rawConnect(name string, level byte, props bool) []byte {
	var body bytes.Buffer
	body.Write([]byte{0, byte(len(name))})
	body.WriteString(name)
	body.WriteByte(level)
	body.WriteByte(0x02)        // Clean Start
	body.Write([]byte{0, 0x3C}) // Keep Alive 60
	if props {
		body.WriteByte(0) // no properties
	}
	body.Write([]byte{0, 1, 'x'}) // client id "x"
	return frame(0x10, body.Bytes())
}

// [MQTT-3.1.2-2] (G5, H1): an unsupported protocol level gets CONNACK 0x84 in the 5.0 format
// (level 6) or return code 0x01 in the 3.1.1 format (level 3), then a close.
func TestUnsupportedProtocolLevel_MQTT_3_1_2_2(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	t.Run("level 6", func(t *testing.T) {
		c := b.Dial(t, v5)
		c.WriteRaw(rawConnect("MQTT", 6, true))
		ack := c.Expect(t, packets.Connack)
		if ack.ReasonCode != 0x84 || ack.SessionPresent {
			t.Fatalf("got %s, want CONNACK 0x84 with Session Present 0", mqtttest.Describe(ack))
		}
		c.ExpectClosed(t)
	})
	for _, name := range []string{"MQTT", "MQIsdp"} {
		t.Run("level 3 "+name, func(t *testing.T) {
			c := b.Dial(t, v311)
			c.WriteRaw(rawConnect(name, 3, false))
			c.Expect(t, packets.Connack)
			if raw := c.LastRaw(); string(raw) != "\x20\x02\x00\x01" {
				t.Fatalf("CONNACK bytes % x, want 20 02 00 01", raw)
			}
			c.ExpectClosed(t)
		})
	}
}

// [MQTT-3.1.3-8] (H7): a 3.1.1 CONNECT with an empty client id and CleanSession 0 gets CONNACK 0x02
// and a close.
func TestEmptyClientIDPersistent311_MQTT_3_1_3_8(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	c := b.Dial(t, v311)
	c.SendConnect("", false, 0)
	c.Expect(t, packets.Connack)
	if raw := c.LastRaw(); string(raw) != "\x20\x02\x00\x02" {
		t.Fatalf("CONNACK bytes % x, want 20 02 00 02", raw)
	}
	c.ExpectClosed(t)

	// CleanSession 1 with an empty id is fine [MQTT-3.1.3-7].
	c = b.Dial(t, v311)
	c.Connect(t, "", true, 0)
	c.Ping(t)
}

// [MQTT-3.2.2-16] [MQTT-3.1.3-6] (D15): a 5.0 CONNECT with an empty client id gets an Assigned
// Client Identifier, which names a session that can be resumed.
func TestAssignedClientIdentifier_MQTT_3_2_2_16(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	c := b.Dial(t, v5)
	ack := c.Connect(t, "", false, 60)
	id := ack.Properties.AssignedClientID
	if id == "" {
		t.Fatalf("got %s, want an Assigned Client Identifier", mqtttest.Describe(ack))
	}
	c.SubscribeOK(t, 1, "assigned/t", 1)
	c.Disconnect(t)

	other := b.Dial(t, v5)
	if id2 := other.Connect(t, "", true, 0).Properties.AssignedClientID; id2 == "" || id2 == id {
		t.Fatalf("second Assigned Client Identifier %q, want a new one (first %q)", id2, id)
	}
	resume(t, b, v5, id)
}

// [MQTT-3.1.2-22] (G14; 3.1.1 [MQTT-3.1.2-24]): a client that sends nothing for 1.5 times its Keep
// Alive is disconnected (5.0: optionally with DISCONNECT 0x8D). The timing is not asserted, only
// that the close comes.
func TestKeepAliveTimeout_MQTT_3_1_2_22(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sleepy := b.Dial(t, v)
		sleepy.Connect(t, "sleepy", true, 0, mqtttest.KeepAlive(1))

		// Meanwhile a client that pings in time stays connected.
		awake := b.Dial(t, v)
		awake.Connect(t, "awake", true, 0, mqtttest.KeepAlive(1))
		for range 4 {
			time.Sleep(500 * time.Millisecond)
			awake.Ping(t)
		}

		for _, pk := range sleepy.Drain(t) {
			if v == v311 || pk.FixedHeader.Type != packets.Disconnect || pk.ReasonCode != 0x8D {
				t.Fatalf("before the keep alive close, got %s", mqtttest.Describe(pk))
			}
		}
	})
}

// A connection that sends nothing after the TCP handshake is closed after Config.ConnectTimeout,
// and so is one that stops inside its CONNECT.
func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithConnectTimeout(500*time.Millisecond))
	c := b.Dial(t, v5)
	c.ExpectClosed(t)

	c = b.Dial(t, v5)
	c.WriteRaw(rawConnect("MQTT", 5, true)[:5])
	c.ExpectClosed(t)

	connectClean(t, b, v5, "in-time").Ping(t)
}

func mustEncode(t *testing.T, pk packets.Packet, v byte) []byte {
	t.Helper()
	b, err := mqtttest.Encode(pk, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// [MQTT-4.1.0-2] §3.1.2.11.2: a session with no Session Expiry Interval (3.1.1: CleanSession 1)
// ends when its network connection closes. Once the client sees the broker close the connection,
// whether for a protocol error or after the client's own half-close, a new connection must not
// find the session (Session Present 0).
func TestSessionEndsBeforeCloseIsSeen_MQTT_4_1_0_2(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		for i := range 100 { // a race: many rounds to catch it
			c := connectClean(t, b, v, "short-lived")
			if i%2 == 0 {
				c.WriteRaw([]byte{0x60, 0x02, 0x00, 0x01}) // PUBREL with bad flags
				c.ExpectDisconnect(t, 0x81)
			} else {
				c.Drop(t)
			}
			c = b.Dial(t, v)
			if ack := c.Connect(t, "short-lived", false, 0); ack.SessionPresent {
				t.Fatalf("round %d: Session Present 1 for a session that ended with its connection", i)
			}
			c.Disconnect(t)
		}
	})
}

// connectBytes builds a CONNECT by hand: flags, then the properties (5.0 only, as raw bytes), then
// the client id, then the will fields if will is not nil (5.0: with no will properties).
func connectBytes(v byte, flags byte, props []byte, clientID string, will []byte) []byte {
	var body bytes.Buffer
	body.Write([]byte{0, 4, 'M', 'Q', 'T', 'T', v, flags, 0, 0})
	if v == v5 {
		body.Write(varint(len(props)))
		body.Write(props)
	}
	body.Write([]byte{byte(len(clientID) >> 8), byte(len(clientID))})
	body.WriteString(clientID)
	if will != nil {
		if v == v5 {
			body.WriteByte(0)
		}
		body.Write(will)
	}
	return frame(0x10, body.Bytes())
}

// [MQTT-3.1.4-1] [MQTT-3.1.2-11] [MQTT-3.1.2-12] [MQTT-3.1.2-13] [MQTT-3.1.2-3] (G4, G6, H14): a
// CONNECT that breaks the format is refused: 5.0 may answer CONNACK 0x80 or more, then the
// connection closes; 3.1.1 closes without CONNACK. No session is created [MQTT-3.1.4-6].
func TestConnectFormatErrors_MQTT_3_1_4_1(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		willFields := []byte{0, 3, 'w', '/', 't', 0, 1, 'x'}
		expectRefused(t, b, v, []refusedConnect{
			{"reserved flag set [MQTT-3.1.2-3]", "c0", connectBytes(v, 0x01, nil, "c0", nil)},
			{"Will QoS 1 without the Will Flag [MQTT-3.1.2-11]", "c1", connectBytes(v, 0x08, nil, "c1", nil)},
			{"Will QoS 3 [MQTT-3.1.2-12]", "c2", connectBytes(v, 0x1C, nil, "c2", willFields)},
			{"Will Retain without the Will Flag [MQTT-3.1.2-13]", "c3", connectBytes(v, 0x20, nil, "c3", nil)},
		})
	})
}

// (E1, E8, G12) §2.2.2.2, §3.1.2.11: Receive Maximum 0, Maximum Packet Size 0 and a property that
// may appear once appearing twice are Protocol Errors: the CONNECT is refused (CONNACK 0x82 or a
// close) and no session is created; in a PUBLISH, DISCONNECT 0x82 and nothing delivered.
func TestPropertyProtocolErrors(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		expectRefused(t, b, v, []refusedConnect{
			{"Receive Maximum 0 (E1)", "p0", connectBytes(v, 0, []byte{0x21, 0, 0}, "p0", nil)},
			{"Maximum Packet Size 0 (E8)", "p1", connectBytes(v, 0, []byte{0x27, 0, 0, 0, 0}, "p1", nil)},
			{"Session Expiry Interval twice (G12)", "p2", connectBytes(v, 0, []byte{0x11, 0, 0, 0, 5, 0x11, 0, 0, 0, 6}, "p2", nil)},
		})

		t.Run("PUBLISH with Message Expiry Interval twice (G12)", func(t *testing.T) {
			watcher := connectClean(t, b, v, "watcher")
			watcher.SubscribeOK(t, 1, "#", 1)
			c := connectClean(t, b, v, "twice")
			// QoS 1, topic "a", id 1, properties: Message Expiry Interval 5, then 6.
			c.WriteRaw(frame(0x32, []byte{0, 1, 'a', 0, 1, 10, 0x02, 0, 0, 0, 5, 0x02, 0, 0, 0, 6, 'x'}))
			c.ExpectDisconnect(t, 0x82)
			watcher.ExpectNothing(t, nothing)
		})
	}, v5)
}

// refusedConnect is a CONNECT the broker must refuse.
type refusedConnect struct {
	name     string
	clientID string
	bytes    []byte
}

// expectRefused sends each CONNECT on its own connection and expects a close (5.0: optionally after
// CONNACK 0x80 or more); then the client id has no session.
func expectRefused(t *testing.T, b *mqtttest.Broker, v byte, cases []refusedConnect) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := b.Dial(t, v)
			c.WriteRaw(tc.bytes)
			r, ok := c.Next(mqtttest.ExpectTimeout)
			switch {
			case !ok:
				t.Fatalf("connection still open after %v", mqtttest.ExpectTimeout)
			case r.Err != nil: // a bare close
			case v == v5 && r.Packet.FixedHeader.Type == packets.Connack && r.Packet.ReasonCode >= 0x80:
				c.ExpectClosed(t)
			default:
				t.Fatalf("got %s, want a close (5.0: CONNACK 0x80 or more first)", mqtttest.Describe(r.Packet))
			}
			c = b.Dial(t, v)
			if ack := c.Connect(t, tc.clientID, false, expiry); ack.SessionPresent {
				t.Fatalf("Session Present 1: the refused CONNECT created a session [MQTT-3.1.4-6]")
			}
		})
	}
}

// [MQTT-3.2.0-1] [MQTT-3.2.0-2] (G7, G1): CONNACK is the first packet the broker sends, and it is
// sent once, even when the client pipelines packets right behind its CONNECT; a DISCONNECT for a
// bad packet that follows comes after the CONNACK, never instead of it.
func TestConnackFirst_MQTT_3_2_0_1(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		for _, durable := range []bool{false, true} {
			for _, tc := range []struct {
				name string
				next []byte
				want byte // the packet type expected after CONNACK; Disconnect: the error close
			}{
				{"PINGREQ", []byte{0xC0, 0x00}, packets.Pingresp},
				{"QoS 2 PUBLISH", rawPublish(v, 0x34, []byte("pipe/t"), 1, []byte("x")), packets.Pubrec},
				{"SUBSCRIBE", mustEncode(t, mqtttest.SubscribePacket(1, "pipe/t", 2), v), packets.Suback},
				{"malformed PUBREL", []byte{0x60, 0x02, 0x00, 0x01}, packets.Disconnect},
			} {
				t.Run(fmt.Sprintf("%s durable=%v", tc.name, durable), func(t *testing.T) {
					c := b.Dial(t, v)
					sei := map[bool]uint32{false: 0, true: expiry}[durable]
					connect := mustEncode(t, mqtttest.ConnectPacket(v, "pipe", !durable, sei), v)
					c.WriteRaw(append(connect, tc.next...))
					c.Expect(t, packets.Connack)
					if tc.want == packets.Disconnect {
						c.ExpectDisconnect(t, 0x81)
						return
					}
					c.Expect(t, tc.want)
					c.ExpectNothing(t, nothing)
				})
			}
		}
	})
}
