package mqtt_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session/state"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// Shared subscriptions, "$share/{group}/{filter}" (§4.8.2): see README "Shared subscriptions"
// and docs/ARCHITECTURE.md "Shared subscriptions".

// A paho.golang publisher sends QoS 2 messages to a group of three paho.golang members: each
// message reaches exactly one member, every member gets some, none is lost.
func TestSharedSpreadsOverMembersPaho(t *testing.T) {
	t.Parallel()
	const total = 60
	b := mqtttest.StartBroker(t)
	var mu sync.Mutex
	got := make(map[string][]string) // payload -> members
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		member := fmt.Sprintf("member-%d", i)
		onPublish := func(pr paho.PublishReceived) (bool, error) {
			mu.Lock()
			got[string(pr.Packet.Payload)] = append(got[string(pr.Packet.Payload)], member)
			mu.Unlock()
			return true, nil
		}
		c, _, _ := pahoConnect(t, b.Addr(), member, true, state.NewInMemory(), onPublish)
		if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "$share/workers/jobs/+", QoS: 2}}}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	}
	pub, _, _ := pahoConnect(t, b.Addr(), "publisher", true, state.NewInMemory(), nil)
	for i := range total {
		if _, err := pub.Publish(ctx, &paho.Publish{Topic: "jobs/x", QoS: 2, Payload: []byte(payloadN("job", i))}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	deadline := time.Now().Add(mqtttest.ExpectTimeout)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == total || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a duplicate, if any, would come now
	mu.Lock()
	defer mu.Unlock()
	perMember := make(map[string]int)
	for i := range total {
		ms := got[payloadN("job", i)]
		if len(ms) != 1 {
			t.Errorf("%s delivered to %v, want exactly one member", payloadN("job", i), ms)
		}
		for _, m := range ms {
			perMember[m]++
		}
	}
	if len(perMember) != 3 {
		t.Errorf("messages per member %v: want all three members used", perMember)
	}
}

// Two raw members of one group, 3.1.1 and 5.0: QoS 1 messages are split between them, each once.
func TestSharedSpreadsOverMembers(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		a := connectClean(t, b, v, "a")
		a.SubscribeOK(t, 1, "$share/g/s/t", 1)
		c := connectClean(t, b, v, "c")
		c.SubscribeOK(t, 1, "$share/g/s/t", 1)
		pub := connectClean(t, b, v, "pub")
		const total = 20
		for i := range total {
			publishQoS1(t, pub, "s/t", uint16(i+1), payloadN("m", i))
		}
		seen := make(map[string]int)
		perMember := make(map[string]int)
		for len(seen) < total {
			got := false
			for name, m := range map[string]*mqtttest.Client{"a": a, "c": c} {
				r, ok := m.Next(50 * time.Millisecond)
				if !ok {
					continue
				}
				if r.Err != nil || r.Packet.FixedHeader.Type != packets.Publish {
					t.Fatalf("%s: expected PUBLISH, got %v %v", name, r.Err, mqtttest.Describe(r.Packet))
				}
				got = true
				seen[string(r.Packet.Payload)]++
				perMember[name]++
				m.Puback(r.Packet.PacketID)
			}
			if !got {
				t.Fatalf("received %d of %d messages, then nothing", len(seen), total)
			}
		}
		a.ExpectNothing(t, nothing)
		c.ExpectNothing(t, nothing)
		for p, n := range seen {
			if n != 1 {
				t.Errorf("%s received %d times", p, n)
			}
		}
		if perMember["a"] == 0 || perMember["c"] == 0 {
			t.Errorf("messages per member %v: want both used", perMember)
		}
	})
}

// CONNACK of a 5.0 client says Shared Subscription Available = 1.
func TestSharedSubscriptionAvailableInConnack(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	ack := b.Dial(t, v5).Connect(t, "c", true, 0)
	if !ack.Properties.SharedSubAvailableFlag || ack.Properties.SharedSubAvailable != 1 {
		t.Fatalf("CONNACK Shared Subscription Available %d (present %t), want 1",
			ack.Properties.SharedSubAvailable, ack.Properties.SharedSubAvailableFlag)
	}
}

// Malformed share names are refused: 0x8F Topic Filter invalid in 5.0, 0x80 in 3.1.1
// [MQTT-4.8.2-1] [MQTT-4.8.2-2].
func TestSharedMalformedShareNames_MQTT_4_8_2_1(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		c := connectClean(t, b, v, "c")
		want := byte(0x8F)
		if v == v311 {
			want = 0x80
		}
		for i, f := range []string{"$share//t", "$share/g", "$share/g/", "$share/g+/t", "$share/g#/t", "$share/+/t", "$share/g/t/#/x"} {
			id := uint16(i + 1)
			c.Subscribe(id, f, 1)
			ack := c.ExpectID(t, packets.Suback, id)
			if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != want {
				t.Errorf("SUBACK for %q: % x, want %02x", f, ack.ReasonCodes, want)
			}
		}
		c.SubscribeOK(t, 100, "$share/g/a/b/#", 2)
	})
}

// No Local on a shared subscription is a Protocol Error: DISCONNECT 0x82 [MQTT-3.8.3-4].
func TestSharedNoLocalIsProtocolError_MQTT_3_8_3_4(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	c := connectClean(t, b, v5, "c")
	pk := mqtttest.SubscribePacket(1, "$share/g/t", 1)
	pk.Filters[0].NoLocal = true
	c.Send(pk)
	c.ExpectDisconnect(t, 0x82)
}

// Retained messages are not sent on a shared subscription.
func TestSharedRetainedNotSent(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		pub := connectClean(t, b, v, "pub")
		pub.PublishRetained("r/t", 1, 1, []byte("kept"))
		pub.ExpectID(t, packets.Puback, 1)
		c := connectClean(t, b, v, "c")
		c.SubscribeOK(t, 1, "$share/g/r/t", 1)
		c.ExpectNothing(t, 200*time.Millisecond)
		publishQoS1(t, pub, "r/t", 2, "live")
		c.Puback(c.ExpectPublish(t, "r/t", 1, "live").PacketID)
	})
}

// A QoS 1 message in flight to a member whose session ends goes back to the group and to
// another member: at least once.
func TestSharedQoS1BackToGroupWhenSessionEnds(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		a := connectClean(t, b, v, "a")
		a.SubscribeOK(t, 1, "$share/g/t", 1)
		pub := connectClean(t, b, v, "pub")
		publishQoS1(t, pub, "t", 1, "m1")
		a.ExpectPublish(t, "t", 1, "m1") // not acknowledged
		c := connectClean(t, b, v, "c")
		c.SubscribeOK(t, 1, "$share/g/t", 1)
		c.ExpectNothing(t, 100*time.Millisecond)
		a.Drop(t) // the session ends with its connection
		c.Puback(c.ExpectPublish(t, "t", 1, "m1").PacketID)
		c.ExpectNothing(t, 100*time.Millisecond)
	})
}

// A QoS 2 message sent to a member whose session ends before it completes is dropped and counted,
// never sent to another member [MQTT-4.8.2-5].
func TestSharedQoS2SentThenSessionEndedDropped_MQTT_4_8_2_5(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		a := connectClean(t, b, v, "a")
		a.SubscribeOK(t, 1, "$share/g/t", 2)
		pub := connectClean(t, b, v, "pub")
		publishQoS2(t, pub, "t", 1, "m1")
		a.ExpectPublish(t, "t", 2, "m1") // no PUBREC
		c := connectClean(t, b, v, "c")
		c.SubscribeOK(t, 1, "$share/g/t", 2)
		a.Drop(t)
		c.ExpectNothing(t, 300*time.Millisecond)
		if n := b.Server().Stats().DroppedSharedMemberGone; n != 1 {
			t.Errorf("DroppedSharedMemberGone %d, want 1", n)
		}
		publishQoS2(t, pub, "t", 2, "m2")
		receiveQoS2(t, c, "t", "m2")
	})
}

// A PUBACK or PUBREC from 0x80 discards the message for the whole group [MQTT-4.8.2-6].
func TestSharedRejectDiscardsForGroup_MQTT_4_8_2_6(t *testing.T) {
	t.Parallel()
	for _, qos := range []byte{1, 2} {
		t.Run(fmt.Sprintf("QoS%d", qos), func(t *testing.T) {
			t.Parallel()
			b := mqtttest.StartBroker(t)
			a := connectClean(t, b, v5, "a")
			a.SubscribeOK(t, 1, "$share/g/t", qos)
			c, _ := connectDurable(t, b, v5, "c")
			c.SubscribeOK(t, 1, "$share/g/t", qos)
			c.Disconnect(t) // c stays a member, offline
			pub := connectClean(t, b, v5, "pub")
			if qos == 1 {
				publishQoS1(t, pub, "t", 1, "m1")
				p := a.ExpectPublish(t, "t", 1, "m1")
				a.Send(mqtttest.AckPacket(packets.Puback, p.PacketID, 0x80))
			} else {
				publishQoS2(t, pub, "t", 1, "m1")
				p := a.ExpectPublish(t, "t", 2, "m1")
				a.PubrecCode(p.PacketID, 0x80)
			}
			a.Ping(t)
			a.Drop(t)
			c = resume(t, b, v5, "c")
			c.ExpectNothing(t, 300*time.Millisecond)
		})
	}
}

// A member that leaves by UNSUBSCRIBE completes what it was sent; what follows goes to the others.
func TestSharedUnsubscribeLeavesGroup(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		a := connectClean(t, b, v, "a")
		a.SubscribeOK(t, 1, "$share/g/t", 2)
		pub := connectClean(t, b, v, "pub")
		publishQoS2(t, pub, "t", 1, "m1")
		p := a.ExpectPublish(t, "t", 2, "m1")
		c := connectClean(t, b, v, "c")
		c.SubscribeOK(t, 1, "$share/g/t", 2)
		a.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe, Qos: 1}, PacketID: 2,
			Filters: packets.Subscriptions{{Filter: "$share/g/t"}}})
		a.ExpectID(t, packets.Unsuback, 2)
		completeOutbound(t, a, p.PacketID) // [MQTT-3.10.4-3]
		for i := range 4 {
			publishQoS2(t, pub, "t", uint16(10+i), payloadN("after", i))
		}
		receiveAllQoS2(t, c, "t", "after", 0, 4)
		a.ExpectNothing(t, 100*time.Millisecond)
		a.Disconnect(t)
		if st := b.Server().Stats(); st.DroppedSharedMemberGone != 0 || st.DroppedSharedNoMember != 0 {
			t.Errorf("shared drops %d/%d, want none", st.DroppedSharedMemberGone, st.DroppedSharedNoMember)
		}
	})
}

// Messages for a group with no member online wait in its durable queue, across a restart, and go
// to the first member back, each once; a message in flight to a durable member is resent to it
// with DUP and its id.
func TestSharedGroupQueueSurvivesRestart(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		a, _ := connectDurable(t, b, v, "a")
		a.SubscribeOK(t, 1, "$share/g/t", 2)
		pub := connectClean(t, b, v, "pub")
		publishQoS2(t, pub, "t", 1, "m0")
		p0 := a.ExpectPublish(t, "t", 2, "m0") // in flight across the restart
		a.Drop(t)
		for i := 1; i <= 5; i++ {
			publishQoS2(t, pub, "t", uint16(i+1), payloadN("m", i))
		}
		if st := b.Server().Stats(); st.SharedQueued != 5 {
			t.Errorf("SharedQueued %d, want 5", st.SharedQueued)
		}
		b.Restart(t)
		a = resume(t, b, v, "a")
		again := a.ExpectPublish(t, "t", 2, "m0")
		if !again.FixedHeader.Dup || again.PacketID != p0.PacketID {
			t.Fatalf("resend of m0: dup %t id %d, want DUP and id %d", again.FixedHeader.Dup, again.PacketID, p0.PacketID)
		}
		receiveAllQoS2(t, a, "t", "m", 1, 6) // sent behind the resend
		completeOutbound(t, a, again.PacketID)
		a.ExpectNothing(t, 200*time.Millisecond)
	})
}

// A QoS 1 message in flight to a member whose session lived in memory only goes to another member
// after a restart: the group's record, not the member, kept it.
func TestSharedQoS1InFlightToCleanMemberSurvivesRestart(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		a := connectClean(t, b, v, "a")
		a.SubscribeOK(t, 1, "$share/g/t", 1)
		c, _ := connectDurable(t, b, v, "c")
		c.SubscribeOK(t, 1, "$share/g/t", 1)
		c.Disconnect(t)
		pub := connectClean(t, b, v, "pub")
		publishQoS1(t, pub, "t", 1, "m1")
		a.ExpectPublish(t, "t", 1, "m1")
		b.Restart(t)
		c = resume(t, b, v, "c")
		c.Puback(c.ExpectPublish(t, "t", 1, "m1").PacketID)
		c.ExpectNothing(t, 200*time.Millisecond)
	})
}

// QoS 0 to a group with no member online is dropped and counted.
func TestSharedQoS0WithoutMemberDropped(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		a, _ := connectDurable(t, b, v, "a")
		a.SubscribeOK(t, 1, "$share/g/t", 1)
		a.Disconnect(t)
		pub := connectClean(t, b, v, "pub")
		pub.Publish("t", 0, 0, []byte("gone"), false)
		pub.Ping(t)
		if n := b.Server().Stats().DroppedSharedNoMember; n != 1 {
			t.Errorf("DroppedSharedNoMember %d, want 1", n)
		}
		a = resume(t, b, v, "a")
		a.ExpectNothing(t, 200*time.Millisecond)
		pub.Publish("t", 0, 0, []byte("live"), false)
		a.ExpectPublish(t, "t", 0, "live")
	})
}

// A group whose last member unsubscribes is deleted with its queue, the drops counted.
func TestSharedGroupWithoutMembersDeleted(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	a, _ := connectDurable(t, b, v5, "a")
	a.SubscribeOK(t, 1, "$share/g/t", 1)
	a.Disconnect(t)
	pub := connectClean(t, b, v5, "pub")
	publishQoS1(t, pub, "t", 1, "m1")
	publishQoS1(t, pub, "t", 2, "m2")
	a = resume(t, b, v5, "a", mqtttest.ReceiveMaximum(1))
	a.Expect(t, packets.Publish) // m1; m2 still waits in the group
	a.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe, Qos: 1}, PacketID: 2,
		Filters: packets.Subscriptions{{Filter: "$share/g/t"}}})
	a.ExpectID(t, packets.Unsuback, 2)
	st := b.Server().Stats()
	if st.SharedGroups != 0 || st.DroppedSharedNoMember != 1 {
		t.Errorf("groups %d, no-member drops %d: want 0 and 1", st.SharedGroups, st.DroppedSharedNoMember)
	}
}

// receiveAllQoS2 expects new QoS 2 deliveries of payloadN(prefix, from..to-1) in order, then
// completes them all.
func receiveAllQoS2(t *testing.T, c *mqtttest.Client, topic, prefix string, from, to int) {
	t.Helper()
	var ids []uint16
	for i := from; i < to; i++ {
		p := c.ExpectPublish(t, topic, 2, payloadN(prefix, i))
		if p.FixedHeader.Dup {
			t.Fatalf("first delivery of %q has DUP=1", payloadN(prefix, i))
		}
		ids = append(ids, p.PacketID)
	}
	for _, id := range ids {
		completeOutbound(t, c, id)
	}
}

// The Authorizer decides a shared subscription by the filter after the share name.
func TestSharedSubscriptionAuthorizedByItsFilter(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.Authorizer = denyPrefix{prefix: "secret/"} }))
		c := connectClean(t, b, v, "c")
		c.Subscribe(1, "$share/g/secret/x", 1)
		want := byte(0x87)
		if v == v311 {
			want = 0x80
		}
		if ack := c.ExpectID(t, packets.Suback, 1); len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != want {
			t.Fatalf("SUBACK for $share/g/secret/x: % x, want %02x", ack.ReasonCodes, want)
		}
		c.SubscribeOK(t, 2, "$share/secret/public/x", 1) // a share name is not a topic
	})
}

// (C14) [MQTT-4.8.2-5]: a member that drops before PUBREC and whose session then expires never has
// its QoS 2 message given to the other member.
func TestSharedQoS2MemberSessionExpiresNotResent_MQTT_4_8_2_5(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	a := b.Dial(t, v5)
	a.Connect(t, "a", true, 1) // Session Expiry Interval 1 s
	a.SubscribeOK(t, 1, "$share/g/t", 2)
	pub := connectClean(t, b, v5, "pub")
	publishQoS2(t, pub, "t", 1, "m1")
	a.ExpectPublish(t, "t", 2, "m1") // no PUBREC
	c := connectClean(t, b, v5, "c")
	c.SubscribeOK(t, 1, "$share/g/t", 2)
	a.Drop(t)
	deadline := time.Now().Add(mqtttest.ExpectTimeout)
	for b.Server().Stats().DroppedSharedMemberGone == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the member's session did not end with its QoS 2 message dropped within %v", mqtttest.ExpectTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	publishQoS2(t, pub, "t", 2, "m2") // a sentinel: m1 would come before it
	receiveQoS2(t, c, "t", "m2")
}
