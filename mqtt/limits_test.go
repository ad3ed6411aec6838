package mqtt_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
	"github.com/oncemq/oncemq/session/reason"
)

// A QoS 2 PUBLISH for a session whose queue is full is refused with PUBREC 0x97 before anything is
// stored [MQTT-4.3.3-9]; the subscriber later gets every message that was acknowledged, exactly once,
// and the full session is named in Stats.
func TestQueueFullRefusedThenDeliveredOnce_MQTT_4_3_3_9(t *testing.T) {
	b := mqtttest.StartBroker(t, mqtttest.WithMaxQueued(5))
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "q", 2)
	sub.Disconnect(t)

	pub := connectClean(t, b, v5, "pub")
	var acked []string
	for i := range 8 {
		id, payload := uint16(i+1), payloadN("m", i)
		pub.Publish("q", 2, id, []byte(payload), false)
		rec := pub.ExpectID(t, packets.Pubrec, id)
		switch reason.Code(rec.ReasonCode) {
		case reason.Success:
			acked = append(acked, payload)
			pub.Pubrel(id)
			pub.ExpectAck(t, packets.Pubcomp, id, 0)
		case reason.QuotaExceeded: // the id is free again: no PUBREL [MQTT-4.3.3-9]
		default:
			t.Fatalf("PUBREC 0x%02X", rec.ReasonCode)
		}
	}
	if len(acked) != 5 {
		t.Fatalf("%d acknowledged, want 5 (the queue's limit), the rest refused", len(acked))
	}
	st := b.Server().Stats()
	if st.RefusedQueueFull != 3 || !slices.Equal(st.FullSessions, []string{"sub"}) || st.DroppedQueueFull != 0 {
		t.Errorf("Stats: refused %d, full %v, dropped %d; want 3, [sub], 0", st.RefusedQueueFull, st.FullSessions, st.DroppedQueueFull)
	}
	// A refused id may be used again at once, for a new message: still refused while full.
	pub.Publish("q", 2, 8, []byte("again"), false)
	pub.ExpectAck(t, packets.Pubrec, 8, byte(reason.QuotaExceeded))

	sub = resume(t, b, v5, "sub")
	var ids []uint16
	for _, want := range acked {
		ids = append(ids, sub.ExpectPublish(t, "q", 2, want).PacketID)
	}
	for _, id := range ids {
		completeOutbound(t, sub, id)
	}
	sub.ExpectNothing(t, nothing)
}

// 3.1.1 has no Receive Maximum: a client may have every packet identifier awaiting PUBREL.
func TestV311MayUseWholeIDSpace(t *testing.T) {
	b := mqtttest.StartBroker(t)
	c := connectClean(t, b, v311, "burst")
	const n = 2000
	for i := range n {
		c.Publish("burst", 2, uint16(i+1), []byte("x"), false)
	}
	for i := range n {
		c.ExpectID(t, packets.Pubrec, uint16(i+1))
	}
	if st := b.Server().Stats(); st.InboundInFlight != n {
		t.Errorf("%d ids awaiting PUBREL, want %d", st.InboundInFlight, n)
	}
}

// --max-keepalive: a 5.0 client asking for more (or 0) is told the maximum in Server Keep Alive
// [MQTT-3.2.2-21]; a 3.1.1 client, which cannot be told, is refused with 0x02.
func TestMaxKeepAlive_MQTT_3_2_2_21(t *testing.T) {
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.MaxKeepAlive = 30 }))
	for _, ka := range []uint16{0, 60} {
		c := b.Dial(t, v5)
		ack := c.Connect(t, fmt.Sprint("ka", ka), true, 0, mqtttest.KeepAlive(ka))
		if !ack.Properties.ServerKeepAliveFlag || ack.Properties.ServerKeepAlive != 30 {
			t.Errorf("keep alive %d: CONNACK Server Keep Alive %v %d, want 30", ka, ack.Properties.ServerKeepAliveFlag, ack.Properties.ServerKeepAlive)
		}
	}
	c := b.Dial(t, v5)
	if ack := c.Connect(t, "ka10", true, 0, mqtttest.KeepAlive(10)); ack.Properties.ServerKeepAliveFlag {
		t.Error("keep alive 10 under the maximum: Server Keep Alive sent")
	}
	old := b.Dial(t, v311)
	old.SendConnect("ka311", true, 0, mqtttest.KeepAlive(60))
	if ack := old.Expect(t, packets.Connack); ack.ReasonCode != 0x02 {
		t.Errorf("3.1.1 keep alive 60: CONNACK 0x%02X, want 0x02", ack.ReasonCode)
	}
	old.ExpectClosed(t)
}

// --max-session-expiry caps the Session Expiry Interval and tells a 5.0 client the cap.
func TestMaxSessionExpiry(t *testing.T) {
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.MaxSessionExpiry = 60 }))
	c, ack := connectDurable(t, b, v5, "capped")
	if !ack.Properties.SessionExpiryIntervalFlag || ack.Properties.SessionExpiryInterval != 60 {
		t.Errorf("CONNACK Session Expiry %v %d, want 60", ack.Properties.SessionExpiryIntervalFlag, ack.Properties.SessionExpiryInterval)
	}
	c.Disconnect(t)
}

// A Will larger than Options.MaxWillSize is refused: 5.0 CONNACK 0x97, 3.1.1 0x03.
func TestMaxWillSize(t *testing.T) {
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.MaxWillSize = 100 }))
	forEachVersion(t, func(t *testing.T, v byte) {
		c := b.Dial(t, v)
		c.SendConnect("will", true, 0, mqtttest.Will("w", make([]byte, 200), 1, false))
		want := byte(reason.QuotaExceeded)
		if v == v311 {
			want = byte(reason.ConnectionRefusedServerUnavailable)
		}
		if ack := c.Expect(t, packets.Connack); ack.ReasonCode != want {
			t.Errorf("CONNACK 0x%02X, want 0x%02X", ack.ReasonCode, want)
		}
	})
}

// Server.Publish is refused the same way: ErrQueueFull, nothing stored.
func TestServerPublishQueueFull(t *testing.T) {
	b := mqtttest.StartBroker(t, mqtttest.WithMaxQueued(1))
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "q", 1)
	sub.Disconnect(t)
	ctx := context.Background()
	if err := b.Server().Publish(ctx, mqtt.Message{Topic: "q", QoS: 1, Payload: []byte("fits")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Server().Publish(ctx, mqtt.Message{Topic: "q", QoS: 1, Payload: []byte("no room")}); !errors.Is(err, mqtt.ErrQueueFull) {
		t.Fatalf("Publish to a full queue: %v, want ErrQueueFull", err)
	}
	if st := b.Server().Stats(); st.Queued != 1 {
		t.Errorf("queued %d, want 1", st.Queued)
	}
}
