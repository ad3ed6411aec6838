package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/rawpacket"
)

// hostileClient is a client of the hostile suite: it writes exactly the bytes it is told and reads
// only when told, so that it can stop reading, stall in the middle of a packet or send garbage.
type hostileClient struct {
	t       testing.TB
	nc      net.Conn
	br      *bufio.Reader
	version byte
}

func dialHostile(t testing.TB, addr string, version byte) *hostileClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &hostileClient{t: t, nc: nc, br: bufio.NewReader(nc), version: version}
}

// send writes pk; a write error is returned, not fatal: hostile peers meet closed sockets.
func (c *hostileClient) send(pk packets.Packet) error {
	b, err := rawpacket.Encode(pk, c.version)
	if err != nil {
		c.t.Fatalf("encode: %v", err)
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = c.nc.Write(b)
	return err
}

// next reads the next packet within d.
func (c *hostileClient) next(d time.Duration) (packets.Packet, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	return rawpacket.ReadFromServer(c.br, c.version, 0, nil)
}

// expect reads packets until one of type typ, which it returns; anything else first fails.
func (c *hostileClient) expect(typ byte) packets.Packet {
	c.t.Helper()
	pk, err := c.next(20 * time.Second)
	if err != nil {
		c.t.Fatalf("want %s: %v", packets.PacketNames[typ], err)
	}
	if pk.FixedHeader.Type != typ {
		c.t.Fatalf("got %s, want %s", rawpacket.Describe(pk), packets.PacketNames[typ])
	}
	return pk
}

// connect sends CONNECT and returns the CONNACK's reason code.
func (c *hostileClient) connect(o rawpacket.ConnectOptions) byte {
	c.t.Helper()
	if err := c.send(rawpacket.Connect(c.version, o)); err != nil {
		c.t.Fatalf("send CONNECT: %v", err)
	}
	return c.expect(packets.Connack).ReasonCode
}

// closedWithin reports whether the broker closes the connection within d (reading and discarding
// what it sends until then).
func (c *hostileClient) closedWithin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	_ = c.nc.SetReadDeadline(deadline)
	buf := make([]byte, 64<<10)
	for {
		if _, err := c.br.Read(buf); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// roundTrip checks that the broker serves a normal client: connect, subscribe, publish at QoS 1,
// and the message comes back.
func roundTrip(t testing.TB, addr string) {
	t.Helper()
	c := dialHostile(t, addr, 5)
	if code := c.connect(rawpacket.ConnectOptions{ClientID: "normal", CleanStart: true}); code != 0 {
		t.Fatalf("normal client: CONNACK 0x%02X", code)
	}
	if err := c.send(rawpacket.Subscribe(1, "normal/t", 1)); err != nil {
		t.Fatal(err)
	}
	c.expect(packets.Suback)
	if err := c.send(rawpacket.Publish("normal/t", 1, 2, []byte("still here"), false)); err != nil {
		t.Fatal(err)
	}
	var gotAck, gotMsg bool
	for !gotAck || !gotMsg {
		pk, err := c.next(20 * time.Second)
		if err != nil {
			t.Fatalf("normal client: %v", err)
		}
		switch {
		case pk.FixedHeader.Type == packets.Puback && pk.PacketID == 2:
			gotAck = true
		case pk.FixedHeader.Type == packets.Publish && bytes.Equal(pk.Payload, []byte("still here")):
			gotMsg = true
			_ = c.send(rawpacket.Ack(packets.Puback, pk.PacketID, 0))
		}
	}
	c.nc.Close()
}

// memKiB reads a field of /proc/PID/status (VmRSS: resident now; VmHWM: the peak), in KiB.
func memKiB(t testing.TB, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the broker's memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// rssSettles waits up to d for the broker's RSS to fall under limitMiB and returns the last figure.
func rssSettles(t testing.TB, pid, limitMiB int, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		rss := memKiB(t, pid, "VmRSS") >> 10
		if rss < limitMiB || time.Now().After(deadline) {
			return rss
		}
		time.Sleep(250 * time.Millisecond)
	}
}
