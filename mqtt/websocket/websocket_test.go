package websocket_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	gws "github.com/gorilla/websocket"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
	"github.com/oncemq/oncemq/mqtt/websocket"
)

// serveWebSocket adds a WebSocket listener on 127.0.0.1 (over TLS when cfg is not nil) to the
// broker b, and returns its URL.
func serveWebSocket(t *testing.T, b *mqtttest.Broker, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "ws"
	if cfg != nil {
		ln, scheme = tls.NewListener(ln, cfg), "wss"
	}
	wl := websocket.Listen(ln)
	go func() { _ = b.Server().Serve(wl) }() // returns when the broker stops
	return scheme + "://" + ln.Addr().String() + websocket.Path
}

func dial(t *testing.T, url string, cfg *tls.Config) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mqtttest.ExpectTimeout)
	defer cancel()
	nc, err := websocket.Dial(ctx, url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// A paho.golang client publishing at QoS 2 over WebSocket reaches a raw client subscribed over
// TCP: one broker behind both listeners.
func TestWebSocketPublishReachesTCPSubscriber(t *testing.T) {
	b := mqtttest.StartBroker(t)
	url := serveWebSocket(t, b, nil)

	sub := mqtttest.Dial(t, b.Addr(), 5)
	sub.Connect(t, "tcp-sub", true, 0)
	sub.SubscribeOK(t, 1, "ws/#", 2)

	nc := dial(t, url, nil)
	pub := paho.NewClient(paho.ClientConfig{ClientID: "ws-pub", Conn: nc})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pub.Connect(ctx, &paho.Connect{ClientID: "ws-pub", CleanStart: true}); err != nil {
		t.Fatalf("paho connect over %s: %v", url, err)
	}
	defer func() { _ = pub.Disconnect(&paho.Disconnect{}) }()
	resp, err := pub.Publish(ctx, &paho.Publish{Topic: "ws/kitchen", QoS: 2, Payload: []byte("21.5")})
	if err != nil || resp.ReasonCode != 0 {
		t.Fatalf("paho publish over WebSocket: %v, %+v", err, resp)
	}
	pk := sub.ExpectPublish(t, "ws/kitchen", 2, "21.5")
	sub.Pubrec(pk.PacketID)
	sub.ExpectID(t, packets.Pubrel, pk.PacketID)
	sub.Pubcomp(pk.PacketID)
}

// A session made over wss:// moves to TCP: messages queued while it was away are delivered
// there, and the TLS client certificate reached the Authenticator of the wss:// connection.
func TestSessionMovesFromWSSToTCP(t *testing.T) {
	ca := mqtttest.NewCA(t, "test CA")
	auth := &certAuth{}
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.Authenticator = auth }))
	serverCfg := &tls.Config{Certificates: []tls.Certificate{ca.KeyPair(t, "broker")}, ClientCAs: ca.Pool(),
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	url := serveWebSocket(t, b, serverCfg)
	clientCfg := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.KeyPair(t, "device-7")}}

	c := mqtttest.NewClient(t, dial(t, url, clientCfg), 5)
	c.Connect(t, "mover", true, 300)
	c.SubscribeOK(t, 1, "moves/#", 2)
	c.Disconnect(t)
	if got := auth.commonNames(); len(got) != 1 || got[0] != "device-7" {
		t.Fatalf("client certificate names seen by the Authenticator over wss://: %q, want [device-7]", got)
	}

	pub := mqtttest.Dial(t, b.Addr(), 4)
	pub.Connect(t, "pub", true, 0)
	pub.Publish("moves/a", 1, 1, []byte("while away"), false)
	pub.ExpectAck(t, packets.Puback, 1, 0)

	tcp := mqtttest.Dial(t, b.Addr(), 5)
	ack := tcp.Connect(t, "mover", false, 300)
	if !ack.SessionPresent {
		t.Fatal("CONNACK over TCP: session not present; the wss:// session did not move")
	}
	tcp.ExpectPublish(t, "moves/a", 1, "while away")
}

// certAuth accepts everyone and records the Common Name of each client certificate it sees.
type certAuth struct {
	mu  sync.Mutex
	cns []string
}

func (a *certAuth) Authenticate(_ context.Context, req *mqtt.ConnectRequest) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
		a.cns = append(a.cns, req.TLS.PeerCertificates[0].Subject.CommonName)
	}
	return req.Username, nil
}

func (a *certAuth) commonNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.cns...)
}

// [MQTT-6.0.0-3] [MQTT-6.0.0-4]: a client that does not offer "mqtt" is refused with 400; one that
// does gets "mqtt" selected (websocket.Dial checks it); another path is 404.
func TestSubprotocol_MQTT_6_0_0_3(t *testing.T) {
	b := mqtttest.StartBroker(t)
	url := serveWebSocket(t, b, nil)
	for _, tc := range []struct {
		url    string
		protos []string
		status int
	}{
		{url, nil, http.StatusBadRequest},
		{url, []string{"mqttv3.1", "chat"}, http.StatusBadRequest},
		{strings.TrimSuffix(url, websocket.Path) + "/other", []string{"mqtt"}, http.StatusNotFound},
	} {
		d := gws.Dialer{Subprotocols: tc.protos, HandshakeTimeout: mqtttest.ExpectTimeout}
		ws, resp, err := d.Dial(tc.url, nil)
		if err == nil {
			ws.Close()
			t.Errorf("dial %s offering %q: upgraded, want HTTP %d", tc.url, tc.protos, tc.status)
			continue
		}
		if resp == nil || resp.StatusCode != tc.status {
			t.Errorf("dial %s offering %q: %v, %v; want HTTP %d", tc.url, tc.protos, err, resp, tc.status)
		}
	}
	c := mqtttest.NewClient(t, dial(t, url, nil), 4)
	c.Connect(t, "ok", true, 0)
	c.Ping(t)
}

// [MQTT-6.0.0-2]: packets need not follow message boundaries: a CONNECT split over two binary
// messages, then a SUBSCRIBE and a PINGREQ in one message, are all served.
func TestFramesAreAStream_MQTT_6_0_0_2(t *testing.T) {
	b := mqtttest.StartBroker(t)
	url := serveWebSocket(t, b, nil)
	d := gws.Dialer{Subprotocols: []string{"mqtt"}, HandshakeTimeout: mqtttest.ExpectTimeout}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	connect, _ := mqtttest.Encode(mqtttest.ConnectPacket(4, "frames", true, 0), 4)
	sub, _ := mqtttest.Encode(mqtttest.SubscribePacket(1, "f", 0), 4)
	ping, _ := mqtttest.Encode(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}}, 4)
	for _, m := range [][]byte{connect[:3], connect[3:], append(sub, ping...)} {
		if err := ws.WriteMessage(gws.BinaryMessage, m); err != nil {
			t.Fatal(err)
		}
	}
	// CONNACK (4 bytes), then SUBACK (5 bytes) and PINGRESP (2 bytes), in whatever messages they
	// come; PINGRESP may overtake SUBACK, which waits for its commit.
	connack, suback, pingresp := []byte{0x20, 2, 0, 0}, []byte{0x90, 3, 0, 1, 0}, []byte{0xD0, 0}
	want := slices.Concat(connack, suback, pingresp)
	var got []byte
	_ = ws.SetReadDeadline(time.Now().Add(mqtttest.ExpectTimeout))
	for len(got) < len(want) {
		typ, m, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("after % x: %v", got, err)
		}
		if typ != gws.BinaryMessage {
			t.Fatalf("message type %d, want binary [MQTT-6.0.0-1]", typ)
		}
		got = append(got, m...)
	}
	if string(got) != string(want) && string(got) != string(slices.Concat(connack, pingresp, suback)) {
		t.Fatalf("broker sent % x, want % x (SUBACK and PINGRESP in either order)", got, want)
	}
}

// [MQTT-6.0.0-1]: a text message closes the connection.
func TestTextMessageCloses_MQTT_6_0_0_1(t *testing.T) {
	b := mqtttest.StartBroker(t)
	url := serveWebSocket(t, b, nil)
	d := gws.Dialer{Subprotocols: []string{"mqtt"}, HandshakeTimeout: mqtttest.ExpectTimeout}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	connect, _ := mqtttest.Encode(mqtttest.ConnectPacket(4, "text", true, 0), 4)
	if err := ws.WriteMessage(gws.TextMessage, connect); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(mqtttest.ExpectTimeout))
	typ, m, err := ws.ReadMessage()
	if err == nil {
		t.Fatalf("after a text message the broker sent message type %d: % x; want the connection closed", typ, m)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("after a text message the connection is still open: %v", err)
	}
}

// [MQTT-3.1.2-22] over WebSocket: a client silent for less than 1.5 times its Keep Alive since its
// last packet stays connected. A deadline of an earlier packet must not fire there: after a read
// deadline, a gorilla WebSocket connection returns errors for good, so the broker cannot wait on
// the way it does on TCP.
func TestKeepAliveCountsFromLastPacket_MQTT_3_1_2_22(t *testing.T) {
	b := mqtttest.StartBroker(t)
	url := serveWebSocket(t, b, nil)
	c := mqtttest.NewClient(t, dial(t, url, nil), 5)
	c.Connect(t, "ws-pinger", true, 0, mqtttest.KeepAlive(2)) // closed after 3 s of silence
	for range 3 {
		time.Sleep(200 * time.Millisecond)
		c.Ping(t)
	}
	// 2.7 s after the last packet, 3.3 s after the CONNECT: within the keep alive of the last.
	time.Sleep(2700 * time.Millisecond)
	c.Ping(t)
}
