package mqtt_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session/state"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// pahoConnect connects a paho.golang 5.0 client to addr with a persistent session (Session Expiry
// Interval 300) kept in st, which must be the same State for a session to resume.
func pahoConnect(t *testing.T, addr, clientID string, clean bool, st *state.State, onPublish func(paho.PublishReceived) (bool, error)) (*paho.Client, net.Conn, *paho.Connack) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, mqtttest.ExpectTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	cfg := paho.ClientConfig{ClientID: clientID, Conn: nc, Session: st, PacketTimeout: 20 * time.Second}
	if onPublish != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){onPublish}
	}
	c := paho.NewClient(cfg)
	sei := uint32(expiry)
	ctx, cancel := context.WithTimeout(context.Background(), mqtttest.ExpectTimeout)
	defer cancel()
	ack, err := c.Connect(ctx, &paho.Connect{
		ClientID:   clientID,
		CleanStart: clean,
		Properties: &paho.ConnectProperties{SessionExpiryInterval: &sei},
	})
	if err != nil {
		t.Fatalf("paho connect %s: %v", clientID, err)
	}
	t.Cleanup(func() {
		_ = nc.Close()
		<-c.Done()
	})
	return c, nc, ack
}

// (D11, D14) [MQTT-4.3.3-10] [MQTT-4.4.0-1]: a paho.golang publisher sends 200 QoS 2 messages while
// the subscriber's connection is dropped mid-stream and resumed with the same session state; the
// subscriber receives every message exactly once.
func TestPahoExactlyOnceAcrossReconnect(t *testing.T) {
	t.Parallel()
	const (
		total   = 200
		dropAt  = 50
		workers = 8
		topic   = "paho/t"
	)
	b := mqtttest.StartBroker(t)

	received := make(chan string, 4*total)
	onPublish := func(pr paho.PublishReceived) (bool, error) {
		received <- string(pr.Packet.Payload)
		return true, nil
	}
	subState := state.NewInMemory()
	sub, subConn, _ := pahoConnect(t, b.Addr(), "paho-sub", true, subState, onPublish)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sub.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 2}}}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}

	pub, _, _ := pahoConnect(t, b.Addr(), "paho-pub", true, state.NewInMemory(), nil)
	var next atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total || ctx.Err() != nil {
					return
				}
				resp, err := pub.Publish(ctx, &paho.Publish{Topic: topic, QoS: 2, Payload: []byte(payloadN("msg", i))})
				switch {
				case err != nil:
					t.Errorf("publish %d: %v", i, err)
					return
				case resp.ReasonCode >= 0x80: // a refusal is not an error for paho v0.23.0
					t.Errorf("publish %d: reason 0x%02X", i, resp.ReasonCode)
					return
				}
			}
		}()
	}

	counts := map[string]int{}
	var order []string
	dropped := false
	deadline := time.After(30 * time.Second)
	for len(counts) < total {
		select {
		case p := <-received:
			counts[p]++
			order = append(order, p)
		case <-deadline:
			t.Fatalf("received %d distinct messages of %d in 30s", len(counts), total)
		}
		if !dropped && len(order) == dropAt {
			// Drop the subscriber's connection mid-stream, wait until the client has finished with
			// it, and resume on a new one with the same session state.
			dropped = true
			t.Logf("dropping the subscriber after %d messages received, %d publishes started", len(order), min(next.Load(), total))
			_ = subConn.Close()
			<-sub.Done()
			var ack *paho.Connack
			sub, subConn, ack = pahoConnect(t, b.Addr(), "paho-sub", false, subState, onPublish)
			if !ack.SessionPresent {
				t.Fatalf("resume: Session Present 0")
			}
		}
	}
	wg.Wait()
	// Late duplicates would show up now.
	time.Sleep(500 * time.Millisecond)
	for len(received) > 0 {
		p := <-received
		counts[p]++
	}
	for i := range total {
		if n := counts[payloadN("msg", i)]; n != 1 {
			t.Errorf("%s received %d times, want exactly once", payloadN("msg", i), n)
		}
	}
	if len(counts) != total {
		t.Errorf("received %d distinct payloads, want %d", len(counts), total)
	}
}
