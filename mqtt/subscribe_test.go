package mqtt_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// §4.7 topic wildcards, [MQTT-4.7.2-1]: + matches one level, # any number of levels including the
// parent, and a filter starting with a wildcard does not match a topic starting with $ ($app here:
// clients may not publish to $SYS, which sys_test.go covers).
func TestWildcards_MQTT_4_7_2_1(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		topics := []string{"a", "a/b", "a/b/c", "a/x/c", "b/x", "$app/x", "/x"}
		filters := map[string][]string{ // filter: the topics it matches, in publish order
			"#":       {"a", "a/b", "a/b/c", "a/x/c", "b/x", "/x"},
			"a/#":     {"a", "a/b", "a/b/c", "a/x/c"},
			"a/+":     {"a/b"},
			"a/+/c":   {"a/b/c", "a/x/c"},
			"+/x":     {"b/x", "/x"},
			"+/+":     {"a/b", "b/x", "/x"},
			"$app/#":  {"$app/x"},
			"$app/+":  {"$app/x"},
			"+":       {"a"},
			"a/b/c/#": {"a/b/c"},
		}
		subs := map[string]*mqtttest.Client{}
		for f := range filters {
			c := connectClean(t, b, v, "sub "+f)
			c.SubscribeOK(t, 1, f, 0)
			subs[f] = c
		}
		pub := connectClean(t, b, v, "pub")
		for i, topic := range topics {
			publishQoS1(t, pub, topic, uint16(i+1), "to "+topic)
		}
		for f, want := range filters {
			for _, topic := range want {
				subs[f].ExpectPublish(t, topic, 0, "to "+topic)
			}
		}
		time.Sleep(nothing) // for all the subscribers at once
		for _, c := range subs {
			c.ExpectNothing(t, 0)
		}
	})
}

// [MQTT-3.8.4-8] [MQTT-3.3.4-2] [MQTT-2.2.1-2] (C2, A3): SUBACK grants the requested QoS; a message
// is delivered at the lower of its QoS and the granted QoS (QoS 0 without a packet identifier);
// overlapping subscriptions of one session get one copy, at the highest granted QoS.
func TestDeliveryQoS_MQTT_3_8_4_8(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		c := connectClean(t, b, v, "sub")
		c.Send(packets.Packet{
			FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
			PacketID:    1,
			Filters: packets.Subscriptions{
				{Filter: "q/0", Qos: 0}, {Filter: "q/1", Qos: 1}, {Filter: "q/2", Qos: 2},
				{Filter: "ov/#", Qos: 1}, {Filter: "ov/+", Qos: 2}, {Filter: "ov/t", Qos: 0},
				{Filter: "bad/#/x", Qos: 1},
			},
		})
		ack := c.ExpectID(t, packets.Suback, 1)
		failure := byte(0x80)
		if v == v5 {
			failure = 0x8F // Topic Filter invalid
		}
		if want := []byte{0, 1, 2, 1, 2, 0, failure}; !bytes.Equal(ack.ReasonCodes, want) {
			t.Fatalf("SUBACK codes % x, want % x", ack.ReasonCodes, want)
		}

		pub := connectClean(t, b, v, "pub")
		for _, tc := range []struct {
			topic     string
			pubQoS    byte
			delivered byte
		}{
			{"q/0", 2, 0}, {"q/1", 2, 1}, {"q/2", 2, 2}, {"q/2", 1, 1}, {"q/2", 0, 0},
			{"ov/t", 2, 2}, {"ov/t", 1, 1},
		} {
			payload := fmt.Sprintf("%s at %d", tc.topic, tc.pubQoS)
			id := uint16(0)
			if tc.pubQoS > 0 {
				id = 1
			}
			pub.Publish(tc.topic, tc.pubQoS, id, []byte(payload), false)
			switch tc.pubQoS {
			case 1:
				pub.ExpectID(t, packets.Puback, 1)
			case 2:
				pub.ExpectID(t, packets.Pubrec, 1)
				pub.Pubrel(1)
				pub.ExpectID(t, packets.Pubcomp, 1)
			}
			p := c.ExpectPublish(t, tc.topic, tc.delivered, payload)
			switch tc.delivered {
			case 0:
				if p.PacketID != 0 {
					t.Fatalf("QoS 0 delivery %s has a packet id [MQTT-2.2.1-2]", mqtttest.Describe(p))
				}
			case 1:
				c.Puback(p.PacketID)
			case 2:
				completeOutbound(t, c, p.PacketID)
			}
			// A second copy (overlapping ov/# ov/+ ov/t) would come before the next payload.
		}
		c.ExpectNothing(t, nothing)
	})
}

// §3.3.1.3 retained messages (D2): a retained message is stored and sent with the retain flag to a
// new subscription [MQTT-3.3.1-5] [MQTT-3.3.1-9], replaced by the next one, removed by one with an
// empty payload (5.0 [MQTT-3.3.1-6], 3.1.1 [MQTT-3.3.1-10]), forwarded to existing subscriptions
// without the flag [MQTT-3.3.1-12], and outlives its publisher's session and a restart.
func TestRetained_MQTT_3_3_1_5(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		pub := connectClean(t, b, v, "pub")
		pub.PublishRetained("ret/a", 1, 1, []byte("v1"))
		pub.ExpectID(t, packets.Puback, 1)
		pub.PublishRetained("ret/b", 2, 2, []byte("b1"))
		pub.ExpectID(t, packets.Pubrec, 2)
		pub.Pubrel(2)
		pub.ExpectID(t, packets.Pubcomp, 2)
		pub.Disconnect(t) // the publisher's session ends; the retained messages do not

		expectRetained := func(t *testing.T, c *mqtttest.Client, filter string, want map[string]string) {
			t.Helper()
			c.SubscribeOK(t, 1, filter, 2)
			got := map[string]string{}
			var pks []packets.Packet
			for range want {
				p := c.Expect(t, packets.Publish)
				if !p.FixedHeader.Retain {
					t.Fatalf("retained delivery %s without the retain flag", mqtttest.Describe(p))
				}
				got[p.TopicName] = string(p.Payload)
				pks = append(pks, p)
			}
			for _, p := range pks {
				switch p.FixedHeader.Qos {
				case 1:
					c.Puback(p.PacketID)
				case 2:
					completeOutbound(t, c, p.PacketID)
				}
			}
			c.ExpectNothing(t, nothing)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("retained on %q: got %v, want %v", filter, got, want)
			}
		}
		expectRetained(t, connectClean(t, b, v, "s1"), "ret/#", map[string]string{"ret/a": "v1", "ret/b": "b1"})

		// A live subscriber gets the next retained publish without the retain flag.
		live := connectClean(t, b, v, "live")
		live.SubscribeOK(t, 1, "ret/a", 0)
		if p := live.ExpectPublish(t, "ret/a", 0, "v1"); !p.FixedHeader.Retain {
			t.Fatalf("retained delivery %s without the retain flag", mqtttest.Describe(p))
		}
		pub = connectClean(t, b, v, "pub")
		pub.PublishRetained("ret/a", 1, 3, []byte("v2"))
		pub.ExpectID(t, packets.Puback, 3)
		if p := live.ExpectPublish(t, "ret/a", 0, "v2"); p.FixedHeader.Retain {
			t.Fatalf("live delivery %s with the retain flag", mqtttest.Describe(p))
		}
		expectRetained(t, connectClean(t, b, v, "s2"), "ret/a", map[string]string{"ret/a": "v2"})

		// An empty retained payload removes the retained message of that topic.
		pub.PublishRetained("ret/b", 1, 4, nil)
		pub.ExpectID(t, packets.Puback, 4)
		expectRetained(t, connectClean(t, b, v, "s3"), "ret/#", map[string]string{"ret/a": "v2"})

		b.Restart(t)
		expectRetained(t, connectClean(t, b, v, "s4"), "ret/#", map[string]string{"ret/a": "v2"})
	})
}

// [MQTT-3.1.2-8] [MQTT-3.1.2-10] (D16, H16): the Will Message is published when the connection ends
// abnormally, and not after a DISCONNECT.
func TestWill_MQTT_3_1_2_8(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		watcher := connectClean(t, b, v, "watcher")
		watcher.SubscribeOK(t, 1, "will/#", 1)

		polite := connectClean(t, b, v, "polite", mqtttest.Will("will/polite", []byte("gone"), 1, false))
		polite.Disconnect(t)
		watcher.ExpectNothing(t, nothing)

		rude := connectClean(t, b, v, "rude", mqtttest.Will("will/rude", []byte("gone"), 1, false))
		rude.Close() // no DISCONNECT
		p := watcher.ExpectPublish(t, "will/rude", 1, "gone")
		watcher.Puback(p.PacketID)
		watcher.ExpectNothing(t, nothing)
		if v == v311 {
			return
		}

		// [MQTT-3.14.4-3] (D16): DISCONNECT 0x04 asks for the will.
		asks := connectClean(t, b, v, "asks", mqtttest.Will("will/asks", []byte("gone"), 1, false))
		asks.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ReasonCode: 0x04})
		asks.ExpectClosed(t)
		p = watcher.ExpectPublish(t, "will/asks", 1, "gone")
		watcher.Puback(p.PacketID)

		// The same in its shortest form, a reason code and no property length (e0 01 04), as
		// mosquitto sends it: the codec alone would read it as 0x00 and drop the will.
		short := connectClean(t, b, v, "short", mqtttest.Will("will/short", []byte("gone"), 1, false))
		short.WriteRaw([]byte{0xE0, 0x01, 0x04})
		short.ExpectClosed(t)
		p = watcher.ExpectPublish(t, "will/short", 1, "gone")
		watcher.Puback(p.PacketID)

		// [MQTT-3.1.3-9] (D13): on takeover the will is published if it has no delay, not if the
		// new connection resumes the session before the delay.
		for _, tc := range []struct {
			delay     uint32
			published bool
		}{{0, true}, {30, false}} {
			id := fmt.Sprintf("taken-%d", tc.delay)
			topic := "will/" + id
			a, _ := connectDurable(t, b, v, id, mqtttest.Will(topic, []byte("gone"), 1, false), mqtttest.WillDelay(tc.delay))
			resume(t, b, v, id)
			a.ExpectDisconnect(t, 0x8E)
			if tc.published {
				p = watcher.ExpectPublish(t, topic, 1, "gone")
				watcher.Puback(p.PacketID)
			}
			watcher.ExpectNothing(t, nothing)
		}
	})
}

// §3.1.2.11.2 (D7, D8) [MQTT-4.1.0-2]: a 5.0 session with Session Expiry Interval 1 is gone 2
// seconds after its connection closed (Session Present 0, subscription gone); one with no interval
// ends with its connection.
func TestSessionExpiry_MQTT_4_1_0_2(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	pub := connectClean(t, b, v5, "pub")

	c := b.Dial(t, v5)
	c.Connect(t, "short", false, 1)
	c.SubscribeOK(t, 1, "exp/t", 1)
	c.Disconnect(t)

	c = b.Dial(t, v5)
	c.Connect(t, "none", false, 0)
	c.SubscribeOK(t, 1, "exp/t", 1)
	c.Disconnect(t)

	time.Sleep(2 * time.Second)
	publishQoS1(t, pub, "exp/t", 1, "after expiry")
	for _, id := range []string{"short", "none"} {
		c = b.Dial(t, v5)
		if ack := c.Connect(t, id, false, expiry); ack.SessionPresent {
			t.Fatalf("%s: Session Present 1 after the session expired", id)
		}
		c.ExpectNothing(t, nothing)
	}
}

// [MQTT-3.14.2-2] (D10): a DISCONNECT with a Session Expiry Interval after a CONNECT with 0 is a
// protocol error: DISCONNECT 0x82, and the session still ends with the connection.
func TestDisconnectSetsExpiryAfterZero_MQTT_3_14_2_2(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	c := b.Dial(t, v5)
	c.Connect(t, "zero", true, 0)
	c.SubscribeOK(t, 1, "zero/t", 1)
	c.Send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Disconnect},
		Properties:  packets.Properties{SessionExpiryInterval: 100, SessionExpiryIntervalFlag: true},
	})
	d := c.Expect(t, packets.Disconnect)
	if d.ReasonCode != 0x82 || d.Properties.SessionExpiryIntervalFlag {
		t.Fatalf("got %s (session expiry property %v), want DISCONNECT 0x82 without one", mqtttest.Describe(d), d.Properties.SessionExpiryIntervalFlag)
	}
	c.ExpectClosed(t)

	c = b.Dial(t, v5)
	if ack := c.Connect(t, "zero", false, expiry); ack.SessionPresent {
		t.Fatalf("Session Present 1: the session should have ended with its connection")
	}
}

// [MQTT-3.1.2-24] [MQTT-3.1.2-25] (C18): a PUBLISH larger than the subscriber's Maximum Packet Size
// is not sent to it, uses no packet identifier and does not hold up what follows.
func TestMaximumPacketSizeOutbound_MQTT_3_1_2_25(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	sub, _ := connectDurable(t, b, v5, "small", mqtttest.MaximumPacketSize(100))
	sub.SubscribeOK(t, 1, "mps/t", 2)
	pub := connectClean(t, b, v5, "pub")

	publishQoS2(t, pub, "mps/t", 1, strings.Repeat("x", 1024))
	publishQoS2(t, pub, "mps/t", 2, "small")
	p := sub.ExpectPublish(t, "mps/t", 2, "small")
	if len(sub.LastRaw()) > 100 {
		t.Fatalf("PUBLISH of %d bytes, over the client's maximum of 100", len(sub.LastRaw()))
	}
	completeOutbound(t, sub, p.PacketID)
	sub.ExpectNothing(t, nothing)
	sub.Disconnect(t)

	// The big one was discarded, not kept for a resume.
	sub = resume(t, b, v5, "small", mqtttest.MaximumPacketSize(100))
	sub.ExpectNothing(t, nothing)
}

// (D18): a session whose expiry passed while the broker was down is gone after the restart; one
// whose expiry has not passed is kept.
func TestSessionExpiryAcrossDowntime(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	for _, c := range []struct {
		id     string
		expiry uint32
	}{{"short", 1}, {"long", expiry}} {
		cl := b.Dial(t, v5)
		cl.Connect(t, c.id, false, c.expiry)
		cl.SubscribeOK(t, 1, "down/t", 1)
		cl.Disconnect(t)
	}
	b.Stop(t)
	time.Sleep(1500 * time.Millisecond)
	b.Start(t)
	for _, c := range []struct {
		id      string
		present bool
	}{{"short", false}, {"long", true}} {
		cl := b.Dial(t, v5)
		if ack := cl.Connect(t, c.id, false, expiry); ack.SessionPresent != c.present {
			t.Errorf("%s: Session Present %v, want %v", c.id, ack.SessionPresent, c.present)
		}
	}
}

// [MQTT-4.1.0-2] (D8, D10, D1): a session that ended — by Session Expiry while offline, or by a
// DISCONNECT that set its Session Expiry Interval to 0 — with deliveries in flight and queued
// is gone from the store too: after a restart it is not resumed and nothing of it is delivered.
func TestEndedSessionStaysGoneAfterRestart(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	pub := connectClean(t, b, v5, "pub")
	for _, id := range []string{"expires", "zeroed"} {
		c := b.Dial(t, v5)
		c.Connect(t, id, false, 1, mqtttest.ReceiveMaximum(1))
		c.SubscribeOK(t, 1, "gone/"+id, 2)
		publishQoS2(t, pub, "gone/"+id, 1, "in flight")
		publishQoS2(t, pub, "gone/"+id, 2, "queued")
		c.ExpectPublish(t, "gone/"+id, 2, "in flight")
		if id == "zeroed" {
			c.Send(packets.Packet{
				FixedHeader: packets.FixedHeader{Type: packets.Disconnect},
				Properties:  packets.Properties{SessionExpiryInterval: 0, SessionExpiryIntervalFlag: true},
			})
			c.ExpectClosed(t)
		} else {
			c.Disconnect(t)
		}
	}
	time.Sleep(2 * time.Second)
	b.Restart(t)
	for _, id := range []string{"expires", "zeroed"} {
		c := b.Dial(t, v5)
		if ack := c.Connect(t, id, false, expiry); ack.SessionPresent {
			t.Errorf("%s: Session Present 1 after the session ended", id)
		}
		c.ExpectNothing(t, nothing)
	}
}

// [MQTT-3.1.3-9] (D16, D18): a session that ends while the broker is down still leaves its will:
// the will is published at start-up, and a persistent subscriber gets it on resume.
func TestWillOfSessionExpiredDuringDowntime_MQTT_3_1_3_9(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	watcher, _ := connectDurable(t, b, v5, "will-watcher")
	watcher.SubscribeOK(t, 1, "will/#", 1)
	watcher.Disconnect(t)

	dying := b.Dial(t, v5)
	dying.Connect(t, "dying", false, 1, mqtttest.Will("will/dying", []byte("gone"), 1, false), mqtttest.WillDelay(60))
	dying.Drop(t) // no DISCONNECT: the will is due at the end of the session, in 1 s
	b.Stop(t)
	time.Sleep(1500 * time.Millisecond)
	b.Start(t)

	watcher = resume(t, b, v5, "will-watcher")
	p := watcher.ExpectPublish(t, "will/dying", 1, "gone")
	watcher.Puback(p.PacketID)
}
