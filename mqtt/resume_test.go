package mqtt_test

import (
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// [MQTT-3.3.1-1] [MQTT-4.4.0-1] [MQTT-4.3.3-5] (C3, C5, C6, C16, D11): a subscriber that holds back
// PUBREC and reconnects with Clean Start 0 (3.1.1 CleanSession 0) gets the PUBLISH again with DUP=1
// and the same id; once it has sent PUBREC, a reconnect gets the PUBREL again and never that
// PUBLISH. Messages queued while it was offline follow, in order.
func TestResumeResendsPublishThenPubrel_MQTT_4_4_0_1(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, ack := connectDurable(t, b, v, "sub")
		if ack.SessionPresent {
			t.Fatalf("first CONNACK has Session Present 1 [MQTT-3.2.2-3]")
		}
		sub.SubscribeOK(t, 1, "res/t", 2)
		pub := connectClean(t, b, v, "pub")

		publishQoS2(t, pub, "res/t", 1, "m1")
		first := sub.ExpectPublish(t, "res/t", 2, "m1")
		id := first.PacketID
		if first.FixedHeader.Dup || id == 0 {
			t.Fatalf("first delivery %s: want DUP=0 and an id [MQTT-4.3.3-1]", mqtttest.Describe(first))
		}
		sub.Disconnect(t) // PUBREC held back

		// [MQTT-3.3.1-1]: the unacknowledged PUBLISH again, DUP=1, same id.
		sub = resume(t, b, v, "sub")
		again := sub.ExpectPublish(t, "res/t", 2, "m1")
		if !again.FixedHeader.Dup || again.PacketID != id {
			t.Fatalf("resent %s: want DUP=1 and id %d [MQTT-3.3.1-1]", mqtttest.Describe(again), id)
		}
		sub.ExpectNothing(t, nothing)
		sub.Pubrec(id)
		sub.ExpectAck(t, packets.Pubrel, id, 0x00)
		sub.Disconnect(t) // PUBCOMP held back

		// Queued while offline [MQTT-4.5.0-1].
		publishQoS2(t, pub, "res/t", 2, "m2")
		publishQoS2(t, pub, "res/t", 3, "m3")

		// [MQTT-4.4.0-1] [MQTT-4.3.3-5]: PUBREL again, not the PUBLISH; then the queue, in order.
		sub = resume(t, b, v, "sub")
		sub.ExpectAck(t, packets.Pubrel, id, 0x00)
		m2 := sub.ExpectPublish(t, "res/t", 2, "m2")
		m3 := sub.ExpectPublish(t, "res/t", 2, "m3")
		for _, p := range []packets.Packet{m2, m3} {
			if p.FixedHeader.Dup {
				t.Fatalf("first delivery %s has DUP=1 [MQTT-4.3.3-1]", mqtttest.Describe(p))
			}
			if p.PacketID == id {
				t.Fatalf("%s reuses id %d, still awaiting PUBCOMP [MQTT-2.2.1-4]", mqtttest.Describe(p), id)
			}
		}
		if m2.PacketID == m3.PacketID {
			t.Fatalf("m2 and m3 share id %d [MQTT-2.2.1-4]", m2.PacketID)
		}
		sub.ExpectNothing(t, nothing)
		sub.Pubcomp(id)
		completeOutbound(t, sub, m2.PacketID)
		completeOutbound(t, sub, m3.PacketID)
		sub.ExpectNothing(t, nothing)
		sub.Disconnect(t)

		// Everything acknowledged: a resume sends nothing.
		sub = resume(t, b, v, "sub")
		sub.ExpectNothing(t, nothing)
	})
}

// (C8) [MQTT-3.1.2-4]: Clean Start 1 throws the in-flight state away: Session Present 0, nothing
// resent, and the old subscription is gone.
func TestCleanStartDiscardsInflight_MQTT_3_1_2_4(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub")
		sub.SubscribeOK(t, 1, "cs/t", 2)
		pub := connectClean(t, b, v, "pub")
		publishQoS2(t, pub, "cs/t", 1, "m1")
		sub.ExpectPublish(t, "cs/t", 2, "m1")
		sub.Disconnect(t)

		sub = b.Dial(t, v)
		ack := sub.Connect(t, "sub", true, expiry)
		if ack.SessionPresent {
			t.Fatalf("Clean Start 1: Session Present 1, want 0 [MQTT-3.2.2-2]")
		}
		sub.ExpectNothing(t, nothing)
		publishQoS2(t, pub, "cs/t", 2, "m2")
		sub.ExpectNothing(t, nothing)
		sub.Disconnect(t)

		// (H4) [MQTT-3.1.2-6] 3.1.1: a CleanSession 1 session ends with its connection. 5.0: Clean
		// Start 1 with a Session Expiry Interval starts a session that outlives it.
		_, ack = connectDurable(t, b, v, "sub")
		if want := v == v5; ack.SessionPresent != want {
			t.Fatalf("after a Clean Start 1 connection: Session Present %v, want %v", ack.SessionPresent, want)
		}
	})
}

// [MQTT-3.3.4-9] (E2, E5, C16): the client's Receive Maximum is per connection. A session holding 5
// unacknowledged QoS 2 PUBLISHes resumed with Receive Maximum 2 gets at most 2 of them until acks
// free slots (a flow in its PUBREL stage still holds one), then the rest, in the original order,
// then a message published after the reconnect.
func TestReceiveMaximumOnResume_MQTT_3_3_4_9(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		const receiveMax = 2
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub")
		sub.SubscribeOK(t, 1, "rm/t", 2)
		pub := connectClean(t, b, v, "pub")

		var ids []uint16
		for i := range 5 {
			publishQoS2(t, pub, "rm/t", uint16(i+1), payloadN("m", i))
			ids = append(ids, sub.ExpectPublish(t, "rm/t", 2, payloadN("m", i)).PacketID)
		}
		sub.Disconnect(t) // none acknowledged

		sub = resume(t, b, v, "sub", mqtttest.ReceiveMaximum(receiveMax))
		want := []struct {
			payload string
			resend  bool
		}{{"m-000", true}, {"m-001", true}, {"m-002", true}, {"m-003", true}, {"m-004", true}, {"late", false}}
		var window []uint16 // ids outstanding on this connection
		next := 0
		for round := 0; next < len(want) || len(window) > 0; round++ {
			for len(window) < receiveMax && next < len(want) {
				w := want[next]
				p := sub.ExpectPublish(t, "rm/t", 2, w.payload)
				if w.resend && (!p.FixedHeader.Dup || p.PacketID != ids[next]) {
					t.Fatalf("resent %s: want DUP=1 and id %d [MQTT-3.3.1-1]", mqtttest.Describe(p), ids[next])
				}
				if !w.resend && p.FixedHeader.Dup {
					t.Fatalf("first delivery %s has DUP=1", mqtttest.Describe(p))
				}
				window = append(window, p.PacketID)
				next++
			}
			if round == 0 {
				// Published after the reconnect: it must wait behind the resends.
				publishQoS2(t, pub, "rm/t", 100, "late")
			}
			sub.ExpectNothing(t, nothing) // no more than receiveMax outstanding
			id := window[0]
			window = window[1:]
			sub.Pubrec(id)
			sub.ExpectAck(t, packets.Pubrel, id, 0x00)
			if round == 0 {
				sub.ExpectNothing(t, nothing) // the PUBREL stage still holds the slot
			}
			sub.Pubcomp(id)
		}
		sub.ExpectNothing(t, nothing)
	}, v5)
}

// [MQTT-3.1.4-3] [MQTT-3.1.4-4] (D12, H8): B connects with the client id of A, which has a QoS 2
// delivery awaiting PUBCOMP. A gets DISCONNECT 0x8E (5.0; 3.1.1: a bare close) and is closed; B
// gets Session Present 1 and the PUBREL again, and the flow completes on B.
func TestTakeoverMidFlow_MQTT_3_1_4_3(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		a, _ := connectDurable(t, b, v, "dev")
		a.SubscribeOK(t, 1, "tk/t", 2)
		pub := connectClean(t, b, v, "pub")

		publishQoS2(t, pub, "tk/t", 1, "m1")
		p := a.ExpectPublish(t, "tk/t", 2, "m1")
		a.Pubrec(p.PacketID)
		a.ExpectAck(t, packets.Pubrel, p.PacketID, 0x00) // PUBCOMP held back

		bc, ack := connectDurable(t, b, v, "dev")
		if !ack.SessionPresent {
			t.Fatalf("takeover with Clean Start 0: Session Present 0, want 1 [MQTT-3.2.2-3]")
		}
		a.ExpectDisconnect(t, 0x8E)
		bc.ExpectAck(t, packets.Pubrel, p.PacketID, 0x00)
		bc.Pubcomp(p.PacketID)
		bc.ExpectNothing(t, nothing)

		// The session, subscription included, is B's now.
		publishQoS2(t, pub, "tk/t", 2, "m2")
		receiveQoS2(t, bc, "tk/t", "m2")
		bc.ExpectNothing(t, nothing)
	})
}

// (C11, C9) [MQTT-4.4.0-2]: a PUBREC for an id the broker never used gets PUBREL 0x92 (3.1.1: a
// plain PUBREL); in 5.0 a PUBREC of 0x80 or more ends the delivery: no PUBREL, nothing resent on
// resume, and its Receive Maximum slot is free again.
func TestPubrecFromSubscriber_MQTT_4_4_0_2(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub", mqtttest.ReceiveMaximum(1))
		sub.Pubrec(999)
		sub.ExpectAck(t, packets.Pubrel, 999, 0x92)
		sub.Ping(t)
		if v == v311 {
			return
		}

		sub.SubscribeOK(t, 1, "refuse/t", 2)
		pub := connectClean(t, b, v, "pub")
		publishQoS2(t, pub, "refuse/t", 1, "refused")
		publishQoS2(t, pub, "refuse/t", 2, "next")
		p := sub.ExpectPublish(t, "refuse/t", 2, "refused")
		sub.PubrecCode(p.PacketID, 0x80)
		// No PUBREL; the slot (Receive Maximum 1) goes to the next message.
		receiveQoS2(t, sub, "refuse/t", "next")
		sub.ExpectNothing(t, nothing)
		sub.Disconnect(t)

		sub = resume(t, b, v, "sub")
		sub.ExpectNothing(t, nothing)
	})
}
