package main

// The hostile-client suite: raw sockets against the real binary (built without -race, run as a
// child process), each case asserting that the broker stays up, answers with the right code, keeps
// serving a normal client, and keeps its resident memory (/proc/PID/status) under a stated bound.
// The counts are scaled so that the whole suite runs in a few minutes on two cores.

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/mqtt/mqtttest/rawpacket"
	"github.com/oncemq/oncemq/session/reason"
)

const (
	peakBoundMiB  = 256 // the broker's peak RSS in every hostile case
	quietBoundMiB = 64  // its RSS once the attack is over and the broker quiet
	quietWait     = 15 * time.Second
)

// startHostileBroker starts the release binary with --sync none (the cases are about memory,
// not disks) and args.
func startHostileBroker(t *testing.T, args ...string) *oncemqtest.Broker {
	t.Helper()
	return startHostileBrokerEnv(t, nil, args...)
}

// startHostileBrokerEnv is startHostileBroker with environment variables (GOGC=...).
func startHostileBrokerEnv(t *testing.T, env []string, args ...string) *oncemqtest.Broker {
	t.Helper()
	return startBroker(t, t.TempDir(), env, append([]string{"--sync", "none"}, args...)...)
}

// checkAfter asserts what every case ends with: the broker is up, serves a normal client, its peak
// RSS stayed under peakBoundMiB and its RSS falls under quietBoundMiB once quiet.
func checkAfter(t *testing.T, b *oncemqtest.Broker) {
	t.Helper()
	if !b.Running() {
		t.Fatal("the broker died")
	}
	roundTrip(t, b.Addr)
	pid := b.Proc().Pid()
	peak := memKiB(t, pid, "VmHWM") >> 10
	t.Logf("peak RSS %d MiB (bound %d MiB)", peak, peakBoundMiB)
	if peak >= peakBoundMiB {
		t.Errorf("peak RSS %d MiB, want under %d MiB", peak, peakBoundMiB)
	}
	rss := rssSettles(t, pid, quietBoundMiB, quietWait+5*time.Second)
	t.Logf("RSS after quiet %d MiB (bound %d MiB)", rss, quietBoundMiB)
	if rss >= quietBoundMiB {
		t.Errorf("RSS %d MiB after %s quiet, want under %d MiB", rss, quietWait, quietBoundMiB)
	}
}

// One subscriber that never reads, with Receive Maximum 65535, and a publisher that sends it large
// messages: the connection's write queue and the session's queue stay within their byte limits.
// At QoS 1 and 2 the publisher is refused with 0x97 once the queue is full (nothing acknowledged is
// dropped); at QoS 0 the excess is dropped. The bounds hold whatever the GOGC: the last case runs
// with the collector off.
func TestHostileNonReadingSubscriber(t *testing.T) {
	for _, tc := range []struct {
		qos  byte
		n    int
		gogc string
	}{{0, 1000, "default"}, {1, 1000, "default"}, {2, 3000, "default"}, {1, 1000, "off"}} {
		t.Run(fmt.Sprintf("qos%d_gogc_%s", tc.qos, tc.gogc), func(t *testing.T) {
			var env []string
			if tc.gogc != "default" {
				env = []string{"GOGC=" + tc.gogc}
			}
			b := startHostileBrokerEnv(t, env)
			sub := dialHostile(t, b.Addr, 5)
			if code := sub.connect(rawpacket.ConnectOptions{ClientID: "sleeper", CleanStart: true, ReceiveMaximum: 65535}); code != 0 {
				t.Fatalf("CONNACK 0x%02X", code)
			}
			if err := sub.send(rawpacket.Subscribe(1, "big", tc.qos)); err != nil {
				t.Fatal(err)
			}
			sub.expect(packets.Suback) // and never read again

			accepted, refused := publishAll(t, b.Addr, tc.qos, tc.n, 512<<10)
			t.Logf("%d x 512 KiB at QoS %d: %d acknowledged, %d refused with 0x97", tc.n, tc.qos, accepted, refused)
			if tc.qos > 0 && (refused == 0 || accepted == 0) {
				t.Errorf("want some acknowledged and the rest refused with 0x97 once the queue is full")
			}
			sub.nc.Close()
			checkAfter(t, b)
		})
	}
}

// publishAll publishes n messages of size bytes on "big" at qos, one at a time, and counts the
// acknowledged and the refused (0x97).
func publishAll(t *testing.T, addr string, qos byte, n, size int) (accepted, refused int) {
	t.Helper()
	pub := dialHostile(t, addr, 5)
	if code := pub.connect(rawpacket.ConnectOptions{ClientID: "firehose", CleanStart: true}); code != 0 {
		t.Fatalf("publisher CONNACK 0x%02X", code)
	}
	payload := bytes.Repeat([]byte{'x'}, size)
	for i := range n {
		id := uint16(i%60000 + 1)
		if err := pub.send(rawpacket.Publish("big", qos, id, payload, false)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if qos == 0 {
			continue
		}
		typ := byte(packets.Puback)
		if qos == 2 {
			typ = packets.Pubrec
		}
		ack := pub.expect(typ)
		switch {
		case ack.ReasonCode == byte(reason.QuotaExceeded):
			refused++
		case ack.ReasonCode < 0x80:
			accepted++
			if qos == 2 {
				_ = pub.send(rawpacket.Ack(packets.Pubrel, id, 0))
				pub.expect(packets.Pubcomp)
			}
		default:
			t.Fatalf("publish %d: %s", i, rawpacket.Describe(ack))
		}
	}
	if qos == 0 {
		pub.send(rawpacket.Pingreq())
		pub.expect(packets.Pingresp) // every PUBLISH was read
	}
	pub.nc.Close()
	return accepted, refused
}

// 1,500 connections each send most of a 1 MiB PUBLISH and then nothing: the read budget keeps
// the broker from allocating 1,500 bodies, and the packet deadline closes them.
func TestHostileHalfSentPackets(t *testing.T) {
	const conns = 1500
	b := startHostileBroker(t, "--packet-timeout", "5s")
	clients := make([]*hostileClient, conns)
	var wg sync.WaitGroup
	for i := range clients {
		c := dialHostile(t, b.Addr, 5)
		if code := c.connect(rawpacket.ConnectOptions{ClientID: fmt.Sprintf("half-%d", i), CleanStart: true}); code != 0 {
			t.Fatalf("CONNACK 0x%02X", code)
		}
		clients[i] = c
		frame, err := rawpacket.Encode(rawpacket.Publish("half", 1, 1, make([]byte, 1<<20-64), false), 5)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			_ = c.nc.SetWriteDeadline(time.Now().Add(8 * time.Second))
			_, _ = c.nc.Write(frame[:len(frame)-1]) // all but the last byte
		})
	}
	wg.Wait()
	if !b.Running() {
		t.Fatal("the broker died")
	}
	roundTrip(t, b.Addr) // served while the half-sent packets wait
	closed := 0
	for _, c := range clients {
		if c.closedWithin(10 * time.Second) {
			closed++
		}
		c.nc.Close()
	}
	if closed != conns {
		t.Errorf("%d of %d stalled connections closed, want all (packet deadline)", closed, conns)
	}
	checkAfter(t, b)
}

// A flood of connections: past --max-connections CONNECT is refused (5.0 CONNACK 0x97, 3.1.1
// 0x03), past the hard cap connections are closed at accept; the broker keeps serving.
func TestHostileConnectionFlood(t *testing.T) {
	const limit = 50
	b := startHostileBroker(t, "--max-connections", fmt.Sprint(limit))
	var open []*hostileClient
	for i := range limit {
		c := dialHostile(t, b.Addr, 5)
		open = append(open, c)
		if code := c.connect(rawpacket.ConnectOptions{ClientID: fmt.Sprintf("c%d", i), CleanStart: true}); code != 0 {
			t.Fatalf("connection %d: CONNACK 0x%02X", i, code)
		}
	}
	v5 := dialHostile(t, b.Addr, 5)
	if code := v5.connect(rawpacket.ConnectOptions{ClientID: "over5", CleanStart: true}); code != byte(reason.QuotaExceeded) {
		t.Errorf("5.0 past the limit: CONNACK 0x%02X, want 0x97", code)
	}
	v4 := dialHostile(t, b.Addr, 4)
	if code := v4.connect(rawpacket.ConnectOptions{ClientID: "over4", CleanStart: true}); code != byte(reason.ConnectionRefusedServerUnavailable) {
		t.Errorf("3.1.1 past the limit: CONNACK 0x%02X, want 0x03", code)
	}
	closedAtAccept := 0
	for range 200 {
		c := dialHostile(t, b.Addr, 5) // held open without CONNECT
		open = append(open, c)
		if c.closedWithin(100 * time.Millisecond) {
			closedAtAccept++
		}
	}
	if closedAtAccept == 0 {
		t.Error("no connection closed at accept past the hard cap")
	}
	for _, c := range open {
		c.nc.Close()
	}
	waitAccepting(t, b.Addr)
	checkAfter(t, b)
}

// waitAccepting waits until the broker accepts a CONNECT again, once the connections of a flood
// are closed (the broker learns it as it reads their end).
func waitAccepting(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := dialHostile(t, addr, 5)
		code := c.connect(rawpacket.ConnectOptions{ClientID: "probe", CleanStart: true})
		c.nc.Close()
		if code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker still refuses connections (0x%02X) after the flood ended", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
