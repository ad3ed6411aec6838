package mqtt_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/internal/wire"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// BenchmarkQoS2 measures complete QoS 2 flows through a real broker on loopback: P publishers with
// W PUBLISHes in flight each, one persistent subscriber on "bench/#", durable sessions. One op is
// one message published, acknowledged (PUBCOMP) and delivered (PUBCOMP from the subscriber). The
// clients are lean raw-packet loops, so the broker's own cost dominates. Report: msgs/s.
func BenchmarkQoS2(b *testing.B) {
	for _, sync := range []string{"always", "none"} {
		for _, pubs := range []int{1, 10} {
			b.Run(fmt.Sprintf("sync=%s/pubs=%d", sync, pubs), func(b *testing.B) {
				benchQoS2(b, sync == "none", pubs, 16)
			})
		}
	}
}

// BenchmarkQoS2Dedup is BenchmarkQoS2 (sync=none, 10 publishers) with every PUBLISH carrying a
// new dedup id (dedup=on), beside the same run without one (dedup=off), in one run.
func BenchmarkQoS2Dedup(b *testing.B) {
	b.Run("dedup=off", func(b *testing.B) { benchQoS2With(b, true, 10, 16, false) })
	b.Run("dedup=on", func(b *testing.B) { benchQoS2With(b, true, 10, 16, true) })
}

func benchQoS2(b *testing.B, noSync bool, pubs, window int) {
	benchQoS2With(b, noSync, pubs, window, false)
}

// benchQoS2With runs the flows; with dedup, every PUBLISH carries a dedup id of its own.
func benchQoS2With(b *testing.B, noSync bool, pubs, window int, dedup bool) {
	broker := mqtttest.StartBroker(b, mqtttest.WithOptions(func(c *mqtt.Options) { c.NoSync = noSync; c.MaxQueued = 1 << 20 }))
	sub := dialRaw(b, broker.Addr(), mqtttest.ConnectPacket(5, "bench-sub", true, 3600, mqtttest.ReceiveMaximum(1024)))
	sub.queue(mqtttest.SubscribePacket(1, "bench/#", 2))
	if err := sub.flush(); err != nil {
		b.Fatal(err)
	}
	if pk, err := sub.read(); err != nil || pk.FixedHeader.Type != packets.Suback {
		b.Fatalf("SUBACK: %v %v", pk.FixedHeader.Type, err)
	}
	perPub := b.N / pubs
	total := perPub * pubs
	var clients []*rawConn
	for i := 0; i < pubs; i++ {
		clients = append(clients, dialRaw(b, broker.Addr(), mqtttest.ConnectPacket(5, fmt.Sprintf("bench-pub-%d", i), true, 3600)))
	}
	errs := make(chan error, pubs+1)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	wg.Add(1)
	go func() { defer wg.Done(); errs <- subscribe(sub, total) }()
	for i, c := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- publish(c, fmt.Sprintf("bench/p%d", i), perPub, window, dedup) }()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "msgs/s")
}

// rawConn reads and writes packets on an already connected MQTT 5.0 connection.
type rawConn struct {
	nc  net.Conn
	br  *bufio.Reader
	buf bytes.Buffer
}

// dialRaw connects and sends CONNECT; it fails b unless CONNACK 0 comes back.
func dialRaw(b *testing.B, addr string, connect packets.Packet) *rawConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	c := &rawConn{nc: nc, br: bufio.NewReader(nc)}
	c.queue(connect)
	if err := c.flush(); err != nil {
		b.Fatal(err)
	}
	if pk, err := c.read(); err != nil || pk.FixedHeader.Type != packets.Connack || pk.ReasonCode != 0 {
		b.Fatalf("CONNACK: %+v %v", pk.FixedHeader, err)
	}
	return c
}

func (c *rawConn) read() (packets.Packet, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	hb, err := c.br.ReadByte()
	if err != nil {
		return packets.Packet{}, err
	}
	pk, body, err := wire.ReadFrame(hb, c.br, 5, 0)
	if err != nil {
		return pk, err
	}
	return pk, wire.Decode(&pk, body)
}

// queue encodes pk; flush writes what was queued in one write.
func (c *rawConn) queue(pk packets.Packet) {
	pk.ProtocolVersion = 5
	_ = wire.Encode(&c.buf, &pk)
}

func (c *rawConn) flush() error {
	if c.buf.Len() == 0 {
		return nil
	}
	_, err := c.nc.Write(c.buf.Bytes())
	c.buf.Reset()
	return err
}

func ack(typ byte, id uint16) packets.Packet {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: typ}, PacketID: id}
	if typ == packets.Pubrel {
		pk.FixedHeader.Qos = 1
	}
	return pk
}

// publish sends n QoS 2 messages with up to window in flight and completes every flow.
func publish(c *rawConn, topic string, n, window int, dedup bool) error {
	payload := make([]byte, 16)
	sent, done, inflight := 0, 0, 0
	for done < n {
		for inflight < window && sent < n {
			sent++
			inflight++
			pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 2},
				TopicName: topic, PacketID: uint16(sent%60000 + 1), Payload: payload}
			if dedup {
				pk.Properties.User = []packets.UserProperty{{Key: "dedup-id", Val: strconv.Itoa(sent)}}
			}
			c.queue(pk)
		}
		if err := c.flush(); err != nil {
			return err
		}
		pk, err := c.read()
		if err != nil {
			return fmt.Errorf("publisher: %w (%d of %d done)", err, done, n)
		}
		switch pk.FixedHeader.Type {
		case packets.Pubrec:
			c.queue(ack(packets.Pubrel, pk.PacketID))
		case packets.Pubcomp:
			done++
			inflight--
		}
	}
	return nil
}

// subscribe completes QoS 2 deliveries until n messages arrived.
func subscribe(c *rawConn, n int) error {
	got := 0
	for got < n {
		pk, err := c.read()
		if err != nil {
			return fmt.Errorf("subscriber: %w (%d of %d received)", err, got, n)
		}
		switch pk.FixedHeader.Type {
		case packets.Publish:
			got++
			c.queue(ack(packets.Pubrec, pk.PacketID))
		case packets.Pubrel:
			c.queue(ack(packets.Pubcomp, pk.PacketID))
		}
		if c.br.Buffered() == 0 {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return c.flush()
}
