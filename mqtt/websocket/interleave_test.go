package websocket_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	mochi "github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/internal/wire"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
	"github.com/oncemq/oncemq/mqtt/websocket"
)

// paho.golang writes a packet as several Writes (its fixed header, then each buffer of the body)
// and writes from more than one goroutine: its pinger sends a PINGREQ as soon as CONNACK is in,
// while the application publishes. Over TCP the pieces go in one writev; over WebSocket each Write
// is a message, and the pieces of two packets could interleave, which the broker then rightly
// closes as malformed ("offset bytes out of range: topic": a PUBLISH header, then a PINGREQ's
// bytes read as the topic length). The connection is a sync.Locker, which paho holds around the
// Writes of one packet, so that packets stay whole in the byte stream [MQTT-6.0.0-2].
func TestPahoPacketsFromManyGoroutinesStayWhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := websocket.Listen(ln)
	defer wl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), mqtttest.ExpectTimeout)
	defer cancel()
	client, err := websocket.Dial(ctx, "ws://"+ln.Addr().String()+websocket.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := wl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	const writers, perWriter = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				cp := packets.NewControlPacket(packets.PINGREQ)
				if i%2 == 0 {
					cp = packets.NewControlPacket(packets.PUBLISH)
					p := cp.Content.(*packets.Publish)
					p.QoS, p.PacketID, p.Topic = 2, uint16(w*perWriter+i+1), fmt.Sprintf("w%d/%d", w, i)
					p.Properties = &packets.Properties{ContentType: "text/plain"}
					p.Payload = []byte(p.Topic)
				}
				if _, err := cp.WriteTo(client); err != nil {
					errs <- err
					return
				}
			}
		}()
	}

	// Read as the broker reads: its framing and decoder.
	_ = server.SetReadDeadline(time.Now().Add(mqtttest.ExpectTimeout))
	br := bufio.NewReader(server)
	publishes, pings := 0, 0
	for publishes+pings < writers*perWriter {
		hb, err := br.ReadByte()
		if err != nil {
			t.Fatalf("after %d PUBLISH and %d PINGREQ: %v", publishes, pings, err)
		}
		pk, body, err := wire.ReadFrame(hb, br, 5, 0)
		if err == nil {
			err = wire.Decode(&pk, body)
		}
		if err != nil {
			t.Fatalf("after %d PUBLISH and %d PINGREQ, packet type %d: %v", publishes, pings, pk.FixedHeader.Type, err)
		}
		switch pk.FixedHeader.Type {
		case mochi.Publish:
			if string(pk.Payload) != pk.TopicName || pk.FixedHeader.Qos != 2 || pk.Properties.ContentType != "text/plain" {
				t.Fatalf("after %d PUBLISH and %d PINGREQ: a PUBLISH mixed with another packet: topic %q, payload %q", publishes, pings, pk.TopicName, pk.Payload)
			}
			publishes++
		case mochi.Pingreq:
			pings++
		default:
			t.Fatalf("after %d PUBLISH and %d PINGREQ: packet type %d; PUBLISH and PINGREQ were written", publishes, pings, pk.FixedHeader.Type)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The failure as it was seen: paho.golang clients over ws:// that publish at QoS 2 right after
// CONNACK, while paho's pinger sends its first PINGREQ, all get their PUBCOMP; the broker closed
// some of them as malformed while the pieces of the two packets could interleave.
func TestPahoConnectThenPublishQoS2OverWebSocket(t *testing.T) {
	b := mqtttest.StartBroker(t)
	url := serveWebSocket(t, b, nil)
	const clients, rounds = 8, 15
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := connectAndPublish(ctx, url, fmt.Sprintf("ws-%d-%d", c, r)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// connectAndPublish connects a paho.golang client over url with a keep alive (which starts its
// pinger), publishes one message at QoS 2 at once, and disconnects.
func connectAndPublish(ctx context.Context, url, id string) error {
	nc, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return err
	}
	// A DISCONNECT from the broker ends the wait for PUBCOMP at once, with its reason.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pub := paho.NewClient(paho.ClientConfig{ClientID: id, Conn: nc, OnServerDisconnect: func(d *paho.Disconnect) {
		cancel(fmt.Errorf("the broker sent DISCONNECT with reason 0x%02X", d.ReasonCode))
	}})
	if _, err := pub.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30}); err != nil {
		nc.Close()
		return fmt.Errorf("%s: connect: %w", id, err)
	}
	defer func() { _ = pub.Disconnect(&paho.Disconnect{}) }()
	r, err := pub.Publish(ctx, &paho.Publish{Topic: "ws/" + id, QoS: 2, Payload: []byte(id)})
	if err != nil {
		return fmt.Errorf("%s: QoS 2 publish: %w (%v)", id, err, context.Cause(ctx))
	}
	if r.ReasonCode != 0 {
		return fmt.Errorf("%s: QoS 2 publish: reason 0x%02X", id, r.ReasonCode)
	}
	return nil
}
