package mqtt_test

import (
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// [MQTT-4.3.3-10] [MQTT-3.3.1-3] (checklist B4, B17): until PUBREL, a PUBLISH that reuses the id
// gets PUBREC again with the same reason code, whether DUP is 0 or 1 and even with another payload,
// and is not routed again; never 0x91.
func TestQoS2InboundDuplicateBeforePubrel_MQTT_4_3_3_10(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		for _, durable := range []bool{false, true} {
			name := "in-memory session"
			if durable {
				name = "durable session"
			}
			t.Run(name, func(t *testing.T) {
				b := mqtttest.StartBroker(t)
				sub, _ := connectDurable(t, b, v, "sub")
				sub.SubscribeOK(t, 1, "dup/t", 2)
				pub := b.Dial(t, v)
				pub.Connect(t, "pub", !durable, map[bool]uint32{false: 0, true: expiry}[durable])

				pub.Publish("dup/t", 2, 5, []byte("first"), false)
				rc := pub.ExpectID(t, packets.Pubrec, 5).ReasonCode
				if v == v5 && rc != 0x00 {
					t.Fatalf("PUBREC reason 0x%02X, want 0x00: a subscriber matched", rc)
				}
				pub.Publish("dup/t", 2, 5, []byte("first"), true)
				pub.ExpectAck(t, packets.Pubrec, 5, rc) // DUP=1 resend
				pub.Publish("dup/t", 2, 5, []byte("second"), false)
				pub.ExpectAck(t, packets.Pubrec, 5, rc) // DUP=0, other payload: still the same message

				receiveQoS2(t, sub, "dup/t", "first")
				sub.ExpectNothing(t, nothing) // exactly one delivery

				pub.Pubrel(5)
				pub.ExpectAck(t, packets.Pubcomp, 5, 0x00)
				pub.Ping(t)
				sub.ExpectNothing(t, nothing)
			})
		}

		// [MQTT-3.3.1-3] (B4): duplicates are detected from the id state only; a first PUBLISH
		// with DUP=1 is a new message and is delivered once.
		t.Run("first PUBLISH with DUP=1", func(t *testing.T) {
			b := mqtttest.StartBroker(t)
			sub, _ := connectDurable(t, b, v, "sub")
			sub.SubscribeOK(t, 1, "dup/t", 2)
			pub := connectClean(t, b, v, "pub")
			pub.Publish("dup/t", 2, 6, []byte("dup-first"), true)
			pub.ExpectAck(t, packets.Pubrec, 6, 0x00)
			pub.Pubrel(6)
			pub.ExpectAck(t, packets.Pubcomp, 6, 0x00)
			receiveQoS2(t, sub, "dup/t", "dup-first") // [MQTT-4.3.3-1]: DUP=0 on the first delivery
			sub.ExpectNothing(t, nothing)
		})

		// (B14): with no subscriber the reason is 0x10 or 0x00 in 5.0, the same for every duplicate, and
		// the flow goes on to PUBCOMP 0x00.
		t.Run("no matching subscriber", func(t *testing.T) {
			b := mqtttest.StartBroker(t)
			pub := connectClean(t, b, v, "pub")
			pub.Publish("nobody/t", 2, 7, []byte("x"), false)
			rc := pub.ExpectID(t, packets.Pubrec, 7).ReasonCode
			if rc != 0x00 && rc != 0x10 {
				t.Fatalf("PUBREC reason 0x%02X, want 0x10 or 0x00", rc)
			}
			pub.Publish("nobody/t", 2, 7, []byte("x"), true)
			pub.ExpectAck(t, packets.Pubrec, 7, rc)
			pub.Pubrel(7)
			pub.ExpectAck(t, packets.Pubcomp, 7, 0x00)
		})
	})
}

// [MQTT-4.3.3-11] (B5, B6, H3): every PUBREL gets a PUBCOMP with its id; a second PUBREL, or one
// for an id never seen, gets PUBCOMP 0x92 in 5.0 (a plain PUBCOMP in 3.1.1) and the connection
// stays open.
func TestPubrelTwiceAndUnknown_MQTT_4_3_3_11(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		pub, _ := connectDurable(t, b, v, "pub")

		pub.Publish("a/b", 2, 9, []byte("x"), false)
		pub.ExpectID(t, packets.Pubrec, 9)
		pub.Pubrel(9)
		pub.ExpectAck(t, packets.Pubcomp, 9, 0x00)
		pub.Pubrel(9)
		pub.ExpectAck(t, packets.Pubcomp, 9, 0x92)
		pub.Ping(t)

		pub.Pubrel(4242)
		pub.ExpectAck(t, packets.Pubcomp, 4242, 0x92)
		if v == v311 {
			if raw := pub.LastRaw(); string(raw) != "\x70\x02\x10\x92" {
				t.Fatalf("3.1.1 PUBCOMP bytes % x, want 70 02 10 92 (H3)", raw)
			}
		}
		pub.Ping(t)
	})
}

// (A6): the inbound and outbound packet identifier sets are separate. The client publishes QoS 2
// id 7 to a topic it subscribes to, so that the broker's delivery of that very message to it uses
// outbound id 7 while inbound id 7 awaits PUBREL. Both flows complete, with no 0x91 or 0x92 and no
// cross-talk.
func TestSameIDBothDirections(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		c, _ := connectDurable(t, b, v, "self")
		c.SubscribeOK(t, 1, "self/t", 2)

		// Use outbound ids 1..6 with QoS 1 deliveries so that the next one is 7.
		for i := range 6 {
			id := uint16(100 + i)
			c.Publish("self/t", 1, id, []byte(payloadN("warm", i)), false)
			var delivery *packets.Packet
			for _, pk := range expectN(t, c, 2) { // our PUBACK and the delivery, in either order
				switch {
				case pk.FixedHeader.Type == packets.Puback && pk.PacketID == id:
				case pk.FixedHeader.Type == packets.Publish && string(pk.Payload) == payloadN("warm", i):
					delivery = &pk
				default:
					t.Fatalf("unexpected %s", mqtttest.Describe(pk))
				}
			}
			if delivery == nil {
				t.Fatalf("no delivery of %q", payloadN("warm", i))
			}
			c.Puback(delivery.PacketID)
		}

		c.Publish("self/t", 2, 7, []byte("both"), false)
		rec := c.ExpectID(t, packets.Pubrec, 7)
		if rec.ReasonCode != 0x00 {
			t.Fatalf("PUBREC reason 0x%02X, want 0x00", rec.ReasonCode)
		}
		p := c.ExpectPublish(t, "self/t", 2, "both")
		if p.PacketID != 7 {
			t.Fatalf("outbound id %d, want 7: the test did not line the ids up", p.PacketID)
		}
		// Outbound 7: PUBREC from us, PUBREL from the broker; inbound 7 still awaits our PUBREL.
		c.Pubrec(7)
		c.ExpectAck(t, packets.Pubrel, 7, 0x00)
		// Inbound 7: our PUBREL completes it; outbound 7 still awaits our PUBCOMP.
		c.Pubrel(7)
		c.ExpectAck(t, packets.Pubcomp, 7, 0x00)
		c.Pubcomp(7)
		c.ExpectNothing(t, nothing)
		c.Ping(t)

		// Both ids are free now: inbound 7 is a new message, delivered once more.
		c.Publish("self/t", 2, 7, []byte("again"), false)
		c.ExpectAck(t, packets.Pubrec, 7, 0x00)
		p = c.ExpectPublish(t, "self/t", 2, "again")
		c.Pubrel(7)
		c.ExpectAck(t, packets.Pubcomp, 7, 0x00)
		completeOutbound(t, c, p.PacketID)
		c.ExpectNothing(t, nothing)
	})
}

// [MQTT-4.3.3-12] (B7): after PUBCOMP the id is free; a PUBLISH reusing it is a new message.
func TestIDReusedAfterPubcomp_MQTT_4_3_3_12(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub")
		sub.SubscribeOK(t, 1, "reuse/t", 2)
		pub, _ := connectDurable(t, b, v, "pub")

		publishQoS2(t, pub, "reuse/t", 9, "A")
		publishQoS2(t, pub, "reuse/t", 9, "B")
		a := sub.ExpectPublish(t, "reuse/t", 2, "A")
		b2 := sub.ExpectPublish(t, "reuse/t", 2, "B")
		completeOutbound(t, sub, a.PacketID)
		completeOutbound(t, sub, b2.PacketID)
		sub.ExpectNothing(t, nothing)
	})
}

// [MQTT-3.3.4-7] (E6, E7): the broker announces its Receive Maximum; a client with more QoS 2
// PUBLISHes awaiting PUBREL gets DISCONNECT 0x93. A DUP resend of an id in flight is not a new
// PUBLISH, and completed flows free their slots.
func TestBrokerReceiveMaximum_MQTT_3_3_4_7(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t, mqtttest.WithReceiveMaximum(2))
		bystander := connectClean(t, b, v, "bystander")

		t.Run("third PUBLISH without PUBREL", func(t *testing.T) {
			c := b.Dial(t, v)
			ack := c.Connect(t, "greedy", true, 0)
			if got := ack.Properties.ReceiveMaximum; got != 2 {
				t.Fatalf("CONNACK Receive Maximum %d, want 2", got)
			}
			c.Publish("rm/t", 2, 1, []byte("1"), false)
			c.ExpectID(t, packets.Pubrec, 1)
			c.Publish("rm/t", 2, 2, []byte("2"), false)
			c.ExpectID(t, packets.Pubrec, 2)
			c.Publish("rm/t", 2, 3, []byte("3"), false)
			c.ExpectDisconnect(t, 0x93)
			bystander.Ping(t)
		})

		t.Run("resends and completed flows", func(t *testing.T) {
			c := connectClean(t, b, v, "polite")
			c.Publish("rm/t", 2, 1, []byte("1"), false)
			rc := c.ExpectID(t, packets.Pubrec, 1).ReasonCode
			c.Publish("rm/t", 2, 2, []byte("2"), false)
			c.ExpectAck(t, packets.Pubrec, 2, rc)
			c.Publish("rm/t", 2, 2, []byte("2"), true) // same id: no new slot
			c.ExpectAck(t, packets.Pubrec, 2, rc)
			c.Pubrel(1)
			c.ExpectAck(t, packets.Pubcomp, 1, 0x00)
			c.Publish("rm/t", 2, 3, []byte("3"), false) // slot of 1 is free
			c.ExpectAck(t, packets.Pubrec, 3, rc)
			c.Pubrel(2)
			c.ExpectAck(t, packets.Pubcomp, 2, 0x00)
			c.Pubrel(3)
			c.ExpectAck(t, packets.Pubcomp, 3, 0x00)
			for i := range 5 {
				publishQoS2(t, c, "rm/t", uint16(10+i), payloadN("seq", i))
			}
			c.Ping(t)
		})
	}, v5)
}

// (B20, B11) [MQTT-4.4.0-1] [MQTT-4.3.3-10]: the inbound id awaiting PUBREL belongs to the session.
// A publisher that lost its connection after PUBREC resumes and resends the PUBLISH with DUP=1: it
// gets PUBREC again and nothing is routed twice; its PUBREL then gets PUBCOMP 0x00, not 0x92. A
// publisher whose session ends with the connection right after PUBREC still had its message
// delivered (Method B).
func TestInboundIDSurvivesReconnect(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub")
		sub.SubscribeOK(t, 1, "in/t", 2)

		pub, _ := connectDurable(t, b, v, "pub")
		pub.Publish("in/t", 2, 3, []byte("kept"), false)
		rc := pub.ExpectID(t, packets.Pubrec, 3).ReasonCode
		pub.Drop(t)

		pub = resume(t, b, v, "pub")
		pub.Publish("in/t", 2, 3, []byte("kept"), true)
		pub.ExpectAck(t, packets.Pubrec, 3, rc)
		pub.Pubrel(3)
		pub.ExpectAck(t, packets.Pubcomp, 3, 0x00)
		receiveQoS2(t, sub, "in/t", "kept")
		sub.ExpectNothing(t, nothing)

		short := connectClean(t, b, v, "short")
		short.Publish("in/t", 2, 4, []byte("owned"), false)
		short.ExpectID(t, packets.Pubrec, 4)
		short.Drop(t) // no PUBREL, and the session is gone
		receiveQoS2(t, sub, "in/t", "owned")
		sub.ExpectNothing(t, nothing)
	})
}
