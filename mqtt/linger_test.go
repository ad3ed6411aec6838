package mqtt_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// A 5.0 client that keeps writing QoS 2 PUBLISHes past the broker's Receive Maximum reads the
// DISCONNECT 0x93 that ends its connection [MQTT-3.3.4-7], and its writes do not fail before it
// has read it: the broker half-closes and drains what the client still sent before it closes. A
// socket closed with the client's bytes unread resets the connection instead, and the client's
// next write fails (EPIPE, ECONNRESET) before it looks at the DISCONNECT.
func TestDisconnectReadByClientStillWriting(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithReceiveMaximum(2))
	payload := bytes.Repeat([]byte("x"), 1024)
	for round := range 3 {
		nc, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		burst, err := mqtttest.Encode(mqtttest.ConnectPacket(v5, "greedy", true, 0), v5)
		if err != nil {
			t.Fatal(err)
		}
		for id := uint16(1); id <= 10; id++ {
			pk, err := mqtttest.Encode(mqtttest.PublishPacket("rm/t", 2, id, payload, false), v5)
			if err != nil {
				t.Fatal(err)
			}
			burst = append(burst, pk...)
		}
		if _, err := nc.Write(burst); err != nil {
			t.Fatal(err)
		}
		// The broker has closed the connection on its side; the client writes once more.
		waitConnections(t, b, 0)
		more, err := mqtttest.Encode(mqtttest.PublishPacket("rm/t", 2, 11, payload, false), v5)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(more); err != nil {
			t.Fatalf("round %d: write after the broker closed: %v, want the bytes taken (the broker drained before closing)", round, err)
		}
		code, err := readUntilDisconnect(nc)
		nc.Close()
		if err != nil {
			t.Fatalf("round %d: no DISCONNECT read: %v", round, err)
		}
		if code != 0x93 {
			t.Fatalf("round %d: DISCONNECT reason 0x%02X, want 0x93", round, code)
		}
	}
}

// waitConnections waits until the broker has n connections open.
func waitConnections(t *testing.T, b *mqtttest.Broker, n int) {
	t.Helper()
	deadline := time.Now().Add(mqtttest.ExpectTimeout)
	for b.Server().Stats().Connections != n {
		if time.Now().After(deadline) {
			t.Fatalf("broker has %d connections, want %d", b.Server().Stats().Connections, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// readUntilDisconnect reads packets until a DISCONNECT, and returns its reason code.
func readUntilDisconnect(nc net.Conn) (byte, error) {
	_ = nc.SetReadDeadline(time.Now().Add(mqtttest.ExpectTimeout))
	br := bufio.NewReader(nc)
	for {
		hb, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		n, shift := 0, 0
		for {
			c, err := br.ReadByte()
			if err != nil {
				return 0, err
			}
			n |= int(c&0x7F) << shift
			shift += 7
			if c < 0x80 {
				break
			}
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return 0, err
		}
		if hb>>4 == packets.Disconnect {
			if n == 0 {
				return 0, nil
			}
			return body[0], nil
		}
		if hb>>4 == packets.Connack && n >= 2 && body[1] != 0 {
			return 0, errors.New("CONNECT refused")
		}
	}
}
