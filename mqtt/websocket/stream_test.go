package websocket_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// [MQTT-6.0.0-2]: the broker reads a WebSocket connection as a byte stream, whatever the message
// boundaries. Clients each send a CONNECT and 100 QoS 2 PUBLISHes (bodies from a few bytes to
// past 128, so one and two byte Remaining Lengths), then their PUBRELs, as one byte stream cut
// into messages from 1 byte (a packet over many messages) to 700 bytes (several packets and
// pieces in one); the flow completes, and a TCP subscriber gets every message in order.
func TestPacketsCutAnywhereInMessages_MQTT_6_0_0_2(t *testing.T) {
	b := mqtttest.StartBroker(t)
	url := serveWebSocket(t, b, nil)
	const clients, messages = 4, 100
	for c := range clients {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			t.Parallel()
			topic := fmt.Sprintf("cut/%d", c)
			sub := mqtttest.Dial(t, b.Addr(), 5)
			sub.Connect(t, "cut-sub-"+topic, true, 0)
			sub.SubscribeOK(t, 1, topic, 0)

			nc := dial(t, url, nil)
			pub := mqtttest.NewClient(t, nc, 5) // reads; the stream is written by writeCut
			stream := encode(t, mqtttest.ConnectPacket(5, "cut-pub-"+topic, true, 0))
			for i := range messages {
				stream = append(stream, encode(t, mqtttest.PublishPacket(topic, 2, uint16(i+1), []byte(payload(c, i)), false))...)
			}
			cuts := writeCut(t, nc, stream, c)
			pub.Expect(t, packets.Connack)
			for i := range messages {
				pub.ExpectID(t, packets.Pubrec, uint16(i+1))
			}
			var rels []byte
			for i := range messages {
				rels = append(rels, encode(t, mqtttest.AckPacket(packets.Pubrel, uint16(i+1), 0))...)
			}
			cuts += writeCut(t, nc, rels, c+1)
			for i := range messages {
				pub.ExpectID(t, packets.Pubcomp, uint16(i+1))
			}
			for i := range messages {
				sub.ExpectPublish(t, topic, 0, payload(c, i))
			}
			t.Logf("%d packets in %d WebSocket messages", 1+2*messages, cuts)
		})
	}
}

func encode(t *testing.T, pk packets.Packet) []byte {
	t.Helper()
	b, err := mqtttest.Encode(pk, 5)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// payload is the body of message i of client c: from 5 to about 300 bytes.
func payload(c, i int) string {
	return fmt.Sprintf("%d-%d-", c, i) + strings.Repeat("x", (i*37)%300)
}

// writeCut writes stream as binary messages of sizes from 1 to 700 bytes, in an order that
// depends on seed, and returns how many messages it wrote. Each Write of the connection is one
// message.
func writeCut(t *testing.T, nc interface{ Write([]byte) (int, error) }, stream []byte, seed int) int {
	t.Helper()
	n := 0
	for k := seed; len(stream) > 0; k++ {
		size := 1 + (k*k*7)%700
		if k%2 == 0 {
			size = 1 + k%4 // runs of tiny messages: a fixed header or a length cut in two
		}
		size = min(size, len(stream))
		if _, err := nc.Write(stream[:size]); err != nil {
			t.Fatalf("write message %d: %v", n, err)
		}
		stream = stream[size:]
		n++
	}
	return n
}
