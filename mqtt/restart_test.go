package mqtt_test

import (
	"fmt"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// (B3, B20, A7, C19, D1) [MQTT-4.4.0-1] [MQTT-4.3.3-10]: the broker restarts between every step of
// a QoS 2 flow, in both directions, and the message is still delivered exactly once.
//
// Publisher: PUBLISH, restart, PUBLISH again with DUP=1 (PUBREC with the same reason, no second
// routing), restart, PUBREL, PUBCOMP 0x00 (the inbound id survived). Subscriber: PUBLISH, restart,
// resume gets the PUBLISH again with DUP=1 and the same id, PUBREC, restart, resume gets PUBREL
// (never the PUBLISH), PUBCOMP, restart, resume gets nothing. Its subscription survives all of it.
func TestRestartBetweenEveryStep(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub")
		sub.SubscribeOK(t, 1, "rs/t", 2)
		pub, _ := connectDurable(t, b, v, "pub")

		// Step 1: PUBLISH; the broker answers PUBREC and delivers.
		pub.Publish("rs/t", 2, 1, []byte("once"), false)
		rc := pub.ExpectID(t, packets.Pubrec, 1).ReasonCode
		first := sub.ExpectPublish(t, "rs/t", 2, "once")
		id := first.PacketID

		b.Restart(t)
		sub.ExpectDisconnect(t, 0x8B) // server shutting down
		pub.ExpectDisconnect(t, 0x8B)

		// Step 2: both resume. The subscriber gets the PUBLISH again; the publisher, which acts as
		// if its PUBREC was lost, sends the PUBLISH again.
		sub = resume(t, b, v, "sub")
		again := sub.ExpectPublish(t, "rs/t", 2, "once")
		if !again.FixedHeader.Dup || again.PacketID != id {
			t.Fatalf("after restart, resent %s: want DUP=1 and id %d [MQTT-3.3.1-1] (A7)", mqtttest.Describe(again), id)
		}
		pub = resume(t, b, v, "pub")
		pub.Publish("rs/t", 2, 1, []byte("once"), true)
		pub.ExpectAck(t, packets.Pubrec, 1, rc) // [MQTT-4.3.3-10]: not a new message
		sub.ExpectNothing(t, nothing)           // and not routed again
		sub.Pubrec(id)
		sub.ExpectAck(t, packets.Pubrel, id, 0x00)

		b.Restart(t)
		sub.ExpectDisconnect(t, 0x8B)
		pub.ExpectDisconnect(t, 0x8B)

		// Step 3: the publisher's PUBREL completes the inbound id that survived (0x00, not 0x92);
		// the subscriber gets the PUBREL again, not the PUBLISH (C19).
		pub = resume(t, b, v, "pub")
		pub.Pubrel(1)
		pub.ExpectAck(t, packets.Pubcomp, 1, 0x00)
		sub = resume(t, b, v, "sub")
		sub.ExpectAck(t, packets.Pubrel, id, 0x00)
		sub.Pubcomp(id)
		sub.ExpectNothing(t, nothing)

		b.Restart(t)

		// Step 4: everything is complete and stays complete.
		sub = resume(t, b, v, "sub")
		sub.ExpectNothing(t, nothing)
		pub = resume(t, b, v, "pub")
		pub.Pubrel(1) // the id was freed durably
		pub.ExpectAck(t, packets.Pubcomp, 1, 0x92)

		// The subscription survived three restarts; a new message gets a new delivery.
		publishQoS2(t, pub, "rs/t", 1, "after")
		p := sub.ExpectPublish(t, "rs/t", 2, "after")
		if p.FixedHeader.Dup {
			t.Fatalf("new message %s has DUP=1", mqtttest.Describe(p))
		}
		completeOutbound(t, sub, p.PacketID)
		sub.ExpectNothing(t, nothing)
	})
}

// (D1, D2, D11) [MQTT-4.5.0-1]: sessions, subscriptions, queued messages and retained messages
// survive a restart: an offline subscriber resumes and gets what was queued, in order, and a new
// subscriber gets the retained message.
func TestRestartKeepsSessionsAndRetained(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub")
		sub.SubscribeOK(t, 1, "keep/+", 2)
		sub.Disconnect(t)

		pub := connectClean(t, b, v, "pub")
		for i := range 3 {
			publishQoS2(t, pub, "keep/q", uint16(i+1), payloadN("queued", i))
		}
		pub.PublishRetained("keep/r", 1, 10, []byte("retained"))
		pub.ExpectID(t, packets.Puback, 10)
		pub.Disconnect(t)

		b.Restart(t)

		sub = resume(t, b, v, "sub")
		var got []packets.Packet
		for i := range 3 {
			got = append(got, sub.ExpectPublish(t, "keep/q", 2, payloadN("queued", i)))
		}
		// The retained message was published while the subscription existed: it was queued too,
		// without the retain flag [MQTT-3.3.1-12].
		r := sub.ExpectPublish(t, "keep/r", 1, "retained")
		if r.FixedHeader.Retain {
			t.Fatalf("live delivery %s has the retain flag", mqtttest.Describe(r))
		}
		sub.Puback(r.PacketID)
		for _, p := range got {
			completeOutbound(t, sub, p.PacketID)
		}
		sub.ExpectNothing(t, nothing)

		fresh := connectClean(t, b, v, "fresh")
		fresh.SubscribeOK(t, 1, "keep/#", 1)
		rp := fresh.ExpectPublish(t, "keep/r", 1, "retained")
		if !rp.FixedHeader.Retain {
			t.Fatalf("retained delivery on subscribe %s: want the retain flag [MQTT-3.3.1-9]", mqtttest.Describe(rp))
		}
		fresh.Puback(rp.PacketID)
		fresh.ExpectNothing(t, nothing)
	})
}

// (D2, A7) [MQTT-3.3.1-1]: a retained QoS 2 message delivered on subscribe, after a restart that
// reloaded it, is resent after another restart with DUP=1, its id and the retain flag; completing
// the delivery does not remove the retained message.
func TestRestartResendsRetainedDelivery(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		pub := connectClean(t, b, v, "pub")
		pub.PublishRetained("r/t", 2, 1, []byte("kept"))
		pub.ExpectID(t, packets.Pubrec, 1)
		pub.Pubrel(1)
		pub.ExpectID(t, packets.Pubcomp, 1)

		b.Restart(t)

		sub, _ := connectDurable(t, b, v, "sub")
		sub.SubscribeOK(t, 1, "r/#", 2)
		first := sub.ExpectPublish(t, "r/t", 2, "kept")
		if !first.FixedHeader.Retain || first.FixedHeader.Dup {
			t.Fatalf("retained delivery %s: want retain=1 dup=0", mqtttest.Describe(first))
		}

		b.Restart(t)

		sub = resume(t, b, v, "sub")
		again := sub.ExpectPublish(t, "r/t", 2, "kept")
		if !again.FixedHeader.Retain || !again.FixedHeader.Dup || again.PacketID != first.PacketID {
			t.Fatalf("resent %s: want retain=1 dup=1 id %d", mqtttest.Describe(again), first.PacketID)
		}
		completeOutbound(t, sub, again.PacketID)
		sub.ExpectNothing(t, nothing)

		b.Restart(t)

		sub = resume(t, b, v, "sub")
		sub.ExpectNothing(t, nothing)
		fresh := connectClean(t, b, v, "fresh")
		fresh.SubscribeOK(t, 1, "r/t", 2)
		p := fresh.ExpectPublish(t, "r/t", 2, "kept")
		if !p.FixedHeader.Retain {
			t.Fatalf("retained delivery %s without the retain flag", mqtttest.Describe(p))
		}
		completeOutbound(t, fresh, p.PacketID)
	})
}

// [MQTT-4.4.0-1] [MQTT-3.3.4-9] (C16, E5, D1): after a restart, a session with deliveries in each
// state (awaiting PUBREC, awaiting PUBCOMP, not yet resent, queued) resumes with Receive Maximum 1:
// everything comes in the original order, each message exactly once, resends with DUP=1 and their
// ids, and never more than one PUBLISH of this connection awaiting its final ack.
func TestRestartResumeOrderWithReceiveMaximum(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub", mqtttest.ReceiveMaximum(3))
		sub.SubscribeOK(t, 1, "o/t", 2)
		pub := connectClean(t, b, v, "pub")
		const total = 6
		for i := range total {
			publishQoS2(t, pub, "o/t", uint16(i+1), payloadN("m", i))
		}
		ids := map[string]uint16{}
		for i := range 3 { // the other 3 wait for send quota
			ids[payloadN("m", i)] = sub.ExpectPublish(t, "o/t", 2, payloadN("m", i)).PacketID
		}
		sub.ExpectNothing(t, nothing)
		sub.Pubrec(ids["m-001"])
		sub.ExpectAck(t, packets.Pubrel, ids["m-001"], 0x00) // m-001 awaits PUBCOMP

		b.Restart(t)

		sub = resume(t, b, v, "sub", mqtttest.ReceiveMaximum(1))
		var delivered []string
		outstanding := map[uint16]bool{} // PUBLISHes sent on this connection, not completed
		pubrelSeen := false
		for len(delivered) < total-1 || !pubrelSeen || len(outstanding) > 0 {
			r, ok := sub.Next(mqtttest.ExpectTimeout)
			if !ok || r.Err != nil {
				t.Fatalf("after %v: nothing more (%v)", delivered, r.Err)
			}
			pk := r.Packet
			switch pk.FixedHeader.Type {
			case packets.Publish:
				p := string(pk.Payload)
				if id, resent := ids[p]; resent != pk.FixedHeader.Dup || resent && id != pk.PacketID {
					t.Fatalf("%s: want DUP=%v and the original id if resent (%d)", mqtttest.Describe(pk), resent, id)
				}
				if len(outstanding) >= 1 {
					t.Fatalf("%s while %d PUBLISH awaits its ack, over Receive Maximum 1", mqtttest.Describe(pk), len(outstanding))
				}
				outstanding[pk.PacketID] = true
				delivered = append(delivered, p)
				sub.Pubrec(pk.PacketID)
			case packets.Pubrel:
				if pk.PacketID == ids["m-001"] && !outstanding[pk.PacketID] {
					pubrelSeen = true
				}
				delete(outstanding, pk.PacketID)
				sub.Pubcomp(pk.PacketID)
			default:
				t.Fatalf("unexpected %s", mqtttest.Describe(pk))
			}
		}
		want := []string{"m-000", "m-002", "m-003", "m-004", "m-005"} // m-001 only needed its PUBREL
		if fmt.Sprint(delivered) != fmt.Sprint(want) {
			t.Fatalf("delivered %v, want %v", delivered, want)
		}
		sub.ExpectNothing(t, nothing)
	}, v5)
}
