package mqtt_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
	"github.com/oncemq/oncemq/mqtt/mqtttest/fixture"
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

// [MQTT-4.13.1-1] (G1, G9-G13, A2, E8, H12, H14): each malformed packet or protocol error after
// CONNECT closes that connection, in 5.0 with DISCONNECT and the right reason code, in 3.1.1 without
// a word; nothing of it is delivered, and the other clients keep working. The packets are the
// rejected fixtures of testdata/packets, and two that depend on the connection: one over the
// broker's Maximum Packet Size, and a second CONNECT.
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

		type badPacket struct {
			name  string
			bytes []byte
			codes []byte // acceptable 5.0 DISCONNECT reason codes
		}
		cases := []badPacket{
			{"packet larger than Maximum Packet Size [MQTT-3.2.2-15]", rawPublish(v, 0x32, []byte("bad/big"), 1, make([]byte, 2*maxPacket)), []byte{0x95}},
			{"second CONNECT [MQTT-3.1.0-2]", mustEncode(t, mqtttest.ConnectPacket(v, "bad", true, 0), v), []byte{0x82}},
		}
		for _, f := range mqtttest.RejectedFixtures(t, v, false) {
			cases = append(cases, badPacket{f.Title(), f.Bytes, fixture.Bytes(f.Reject.Reasons)})
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

// [MQTT-3.1.2-22]: the keep alive counts from the last packet. The broker moves its read deadline
// only when the one in force is well off (socketread.go), so after packets in quick succession
// the deadline in force is that of an earlier packet; when it fires, the broker must see that the
// client was heard from since and wait on, rather than close it early.
func TestKeepAliveCountsFromLastPacket_MQTT_3_1_2_22(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		c := b.Dial(t, v)
		c.Connect(t, "pinger", true, 0, mqtttest.KeepAlive(2)) // closed after 3 s of silence
		for range 3 {
			time.Sleep(200 * time.Millisecond)
			c.Ping(t)
		}
		// The last packet came 0.6 s after the CONNECT: a deadline kept from the CONNECT's time
		// would close at 3 s from it, 2.4 s from now.
		c.ExpectNothing(t, 2800*time.Millisecond)
		c.Ping(t)
		for _, pk := range c.Drain(t) {
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

// [MQTT-3.1.4-1] [MQTT-3.1.4-6] (G4, G6, G12, E1, E8, H14): a CONNECT that breaks the format or
// the property rules is refused: 5.0 may answer CONNACK with one of the fixture's reason codes, then
// the connection closes; 3.1.1 closes without CONNACK. No session is created. The CONNECTs are the
// rejected CONNECT fixtures of testdata/packets (reserved flag, Will flags, Receive Maximum 0,
// Maximum Packet Size 0, a property twice).
func TestRefusedConnect_MQTT_3_1_4_1(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		for _, f := range mqtttest.RejectedFixtures(t, v, true) {
			t.Run(f.Title(), func(t *testing.T) {
				if f.Packet == nil || f.Packet.ClientID == "" {
					t.Fatalf("fixture %s: a rejected CONNECT needs the client id it names, for the session check", f.Name)
				}
				c := b.Dial(t, v)
				c.WriteRaw(f.Bytes)
				r, ok := c.Next(mqtttest.ExpectTimeout)
				reasons := fixture.Bytes(f.Reject.Reasons)
				switch {
				case !ok:
					t.Fatalf("connection still open after %v", mqtttest.ExpectTimeout)
				case r.Err != nil: // a bare close
				case v == v5 && r.Packet.FixedHeader.Type == packets.Connack && bytes.IndexByte(reasons, r.Packet.ReasonCode) >= 0:
					c.ExpectClosed(t)
				default:
					t.Fatalf("got %s, want a close (5.0: CONNACK with reason % x first)", mqtttest.Describe(r.Packet), reasons)
				}
				c = b.Dial(t, v)
				if ack := c.Connect(t, f.Packet.ClientID, false, expiry); ack.SessionPresent {
					t.Fatalf("Session Present 1: the refused CONNECT created a session [MQTT-3.1.4-6]")
				}
			})
		}
	})
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
