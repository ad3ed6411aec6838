package mqtt_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// Server.Publish returns after the commit: a message published in process reaches an offline
// durable session across a restart, exactly once.
func TestServerPublishIsDurable(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t)
		sub, _ := connectDurable(t, b, v, "sub")
		sub.SubscribeOK(t, 1, "app/#", 2)
		sub.Disconnect(t)

		ctx, cancel := context.WithTimeout(context.Background(), mqtttest.ExpectTimeout)
		defer cancel()
		msg := mqtt.Message{Topic: "app/x", Payload: []byte("once"), QoS: 2}
		if err := b.Server().Publish(ctx, msg); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		b.Restart(t)
		sub = resume(t, b, v, "sub")
		receiveQoS2(t, sub, "app/x", "once")
		sub.ExpectNothing(t, nothing)
	})
}

func TestServerPublishRefusesInvalidMessages(t *testing.T) {
	b := mqtttest.StartBroker(t)
	for _, m := range []mqtt.Message{
		{Topic: "a/+", QoS: 1},   // wildcard in a topic name [MQTT-3.3.2-2]
		{Topic: "", QoS: 0},      // empty topic name
		{Topic: "a", QoS: 3},     // no such QoS
		{Topic: "a", Expiry: -1}, // negative expiry
	} {
		if err := b.Server().Publish(context.Background(), m); !errors.Is(err, mqtt.ErrInvalidMessage) {
			t.Errorf("Publish(%+v) = %v, want ErrInvalidMessage", m, err)
		}
	}
}

// Several listeners serve one broker: a message published on one reaches a subscriber on the
// other, and a session moves between them.
func TestServeSeveralListeners(t *testing.T) {
	b := mqtttest.StartBroker(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Server().Serve(ln) }()

	sub := mqtttest.Dial(t, ln.Addr().String(), v5)
	sub.Connect(t, "sub", false, expiry)
	sub.SubscribeOK(t, 1, "t", 1)
	pub := connectClean(t, b, v5, "pub")
	publishQoS1(t, pub, "t", 1, "across")
	p := sub.ExpectPublish(t, "t", 1, "across")
	sub.Puback(p.PacketID)
	sub.Disconnect(t)
	resume(t, b, v5, "sub") // the session made on the second listener, resumed on the first

	b.Stop(t)
	if err := <-served; !errors.Is(err, mqtt.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown = %v, want ErrServerClosed", err)
	}
}

func TestServeAfterShutdown(t *testing.T) {
	srv, err := mqtt.New(mqtt.Options{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c := mqtttest.Dial(t, ln.Addr().String(), v5)
	c.Connect(t, "c", true, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	c.ExpectDisconnect(t, 0x8B) // Server shutting down
	if err := <-served; !errors.Is(err, mqtt.ErrServerClosed) {
		t.Fatalf("Serve = %v, want ErrServerClosed", err)
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ln2); !errors.Is(err, mqtt.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown = %v, want ErrServerClosed", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close after Shutdown = %v, want the first result (nil)", err)
	}
	if err := srv.Publish(ctx, mqtt.Message{Topic: "t"}); !errors.Is(err, mqtt.ErrServerClosed) {
		t.Fatalf("Publish after Shutdown = %v, want ErrServerClosed", err)
	}
}

func TestStats(t *testing.T) {
	b := mqtttest.StartBroker(t)
	sub, _ := connectDurable(t, b, v5, "sub", mqtttest.ReceiveMaximum(1))
	sub.SubscribeOK(t, 1, "t", 2)
	pub := connectClean(t, b, v5, "pub")
	publishQoS2(t, pub, "t", 1, "one") // in flight to sub: it holds back its PUBREC
	publishQoS2(t, pub, "t", 2, "two") // queued behind Receive Maximum 1
	pub.Publish("r", 2, 3, []byte("awaiting PUBREL"), false)
	pub.ExpectID(t, packets.Pubrec, 3)
	sub.ExpectPublish(t, "t", 2, "one")

	st := b.Server().Stats()
	want := mqtt.Stats{Connections: 2, Sessions: 2, SessionsOnline: 2, InboundInFlight: 1, OutboundInFlight: 1, Queued: 1}
	got := mqtt.Stats{Connections: st.Connections, Sessions: st.Sessions, SessionsOnline: st.SessionsOnline,
		InboundInFlight: st.InboundInFlight, OutboundInFlight: st.OutboundInFlight, Queued: st.Queued}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
	// Traffic: three QoS 2 PUBLISHes in (3+3+15 payload bytes), one out ("one"), "two" queued.
	if st.Received != [3]uint64{0, 0, 3} || st.ReceivedBytes != [3]uint64{0, 0, 21} {
		t.Errorf("Stats.Received = %v, bytes %v; want [0 0 3], [0 0 21]", st.Received, st.ReceivedBytes)
	}
	if st.Sent != [3]uint64{0, 0, 1} || st.SentBytes != [3]uint64{0, 0, 3} {
		t.Errorf("Stats.Sent = %v, bytes %v; want [0 0 1], [0 0 3]", st.Sent, st.SentBytes)
	}
	// The sub holds "one" in flight and "two" queued: topic and payload of each.
	if st.QueuedBytes != 8 || st.Accepted != 2 || len(st.Refused) != 0 {
		t.Errorf("Stats.QueuedBytes = %d, Accepted = %d, Refused = %v; want 8, 2, none", st.QueuedBytes, st.Accepted, st.Refused)
	}
	if want := map[string]int{b.Addr(): 2}; !reflect.DeepEqual(st.ConnectionsByListener, want) {
		t.Errorf("Stats.ConnectionsByListener = %v, want %v", st.ConnectionsByListener, want)
	}
	if st.Commits == 0 {
		t.Errorf("Stats.Commits = 0 after durable work")
	}
}
