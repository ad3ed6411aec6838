package mqtt_test

import (
	"fmt"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// Protocol versions, as CONNECT's protocol level.
const (
	v311 byte = 4
	v5   byte = 5
)

// expiry is the Session Expiry Interval of the 5.0 sessions that must outlive their connection.
const expiry = 300

// Short names for the Expect timeouts.
const (
	nothing = mqtttest.NothingTimeout
)

func versionName(v byte) string {
	if v == v311 {
		return "3.1.1"
	}
	return "5.0"
}

// forEachVersion runs f as a parallel subtest for each protocol version given, 3.1.1 and 5.0 when
// none is given, like net/http's run(t, f, modes): one protocol script, every version it applies to.
func forEachVersion(t *testing.T, f func(t *testing.T, v byte), versions ...byte) {
	t.Helper()
	t.Parallel()
	if len(versions) == 0 {
		versions = []byte{v311, v5}
	}
	for _, v := range versions {
		t.Run(versionName(v), func(t *testing.T) {
			t.Parallel()
			f(t, v)
		})
	}
}

// connectDurable connects clientID with a session that outlives the connection: 3.1.1
// CleanSession=0, 5.0 Clean Start=0 with a Session Expiry Interval.
func connectDurable(t *testing.T, b *mqtttest.Broker, v byte, clientID string, opts ...mqtttest.ConnectOption) (*mqtttest.Client, packets.Packet) {
	t.Helper()
	c := b.Dial(t, v)
	ack := c.Connect(t, clientID, false, expiry, opts...)
	return c, ack
}

// connectClean connects clientID with a session that ends with the connection.
func connectClean(t *testing.T, b *mqtttest.Broker, v byte, clientID string, opts ...mqtttest.ConnectOption) *mqtttest.Client {
	t.Helper()
	c := b.Dial(t, v)
	c.Connect(t, clientID, true, 0, opts...)
	return c
}

// resume reconnects a durable session and fails unless the broker had it (Session Present=1).
func resume(t *testing.T, b *mqtttest.Broker, v byte, clientID string, opts ...mqtttest.ConnectOption) *mqtttest.Client {
	t.Helper()
	c, ack := connectDurable(t, b, v, clientID, opts...)
	if !ack.SessionPresent {
		t.Fatalf("resume %q: CONNACK Session Present 0, want 1 [MQTT-3.2.2-3]", clientID)
	}
	return c
}

// publishQoS2 runs a whole inbound QoS 2 flow (PUBLISH, PUBREC, PUBREL, PUBCOMP) and returns the
// PUBREC reason code, failing on a refusal.
func publishQoS2(t *testing.T, c *mqtttest.Client, topic string, id uint16, payload string) byte {
	t.Helper()
	c.Publish(topic, 2, id, []byte(payload), false)
	rec := c.ExpectID(t, packets.Pubrec, id)
	if rec.ReasonCode >= 0x80 {
		t.Fatalf("PUBREC for %q: reason 0x%02X, want success", payload, rec.ReasonCode)
	}
	c.Pubrel(id)
	c.ExpectAck(t, packets.Pubcomp, id, 0x00)
	return rec.ReasonCode
}

// publishQoS1 publishes at QoS 1 and waits for a successful PUBACK: the message is routed.
func publishQoS1(t *testing.T, c *mqtttest.Client, topic string, id uint16, payload string) {
	t.Helper()
	c.Publish(topic, 1, id, []byte(payload), false)
	ack := c.ExpectID(t, packets.Puback, id)
	if ack.ReasonCode >= 0x80 {
		t.Fatalf("PUBACK for %q: reason 0x%02X, want success", payload, ack.ReasonCode)
	}
}

// receiveQoS2 expects a new QoS 2 delivery of payload and completes it (PUBREC, PUBREL, PUBCOMP).
// It returns the packet identifier the broker used.
func receiveQoS2(t *testing.T, c *mqtttest.Client, topic, payload string) uint16 {
	t.Helper()
	p := c.ExpectPublish(t, topic, 2, payload)
	if p.FixedHeader.Dup {
		t.Fatalf("first delivery of %q has DUP=1 [MQTT-4.3.3-1]", payload)
	}
	completeOutbound(t, c, p.PacketID)
	return p.PacketID
}

// completeOutbound answers a QoS 2 delivery with id: PUBREC, expect PUBREL, PUBCOMP.
func completeOutbound(t *testing.T, c *mqtttest.Client, id uint16) {
	t.Helper()
	c.Pubrec(id)
	c.ExpectAck(t, packets.Pubrel, id, 0x00)
	if raw := c.LastRaw(); raw[0] != 0x62 {
		t.Fatalf("PUBREL fixed header 0x%02X, want 0x62 [MQTT-3.6.1-1]", raw[0])
	}
	c.Pubcomp(id)
}

func payloadN(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

// expectN waits for the next n packets, whatever their types.
func expectN(t *testing.T, c *mqtttest.Client, n int) []packets.Packet {
	t.Helper()
	var got []packets.Packet
	for len(got) < n {
		r, ok := c.Next(mqtttest.ExpectTimeout)
		switch {
		case !ok:
			t.Fatalf("expected %d packets, got %s and then nothing", n, mqtttest.DescribeAll(got))
		case r.Err != nil:
			t.Fatalf("expected %d packets, got %s and then: %v", n, mqtttest.DescribeAll(got), r.Err)
		}
		got = append(got, r.Packet)
	}
	return got
}
