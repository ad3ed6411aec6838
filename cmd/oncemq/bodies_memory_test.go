package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/rawpacket"
)

// bodyPayload is message i's payload: its number, then bytes that depend on it, so that a
// delivered payload shows which message it is and that it is whole.
func bodyPayload(i, size int) []byte {
	p := make([]byte, size)
	binary.BigEndian.PutUint32(p, uint32(i))
	for k := 4; k < size; k++ {
		p[k] = byte(i*31 + k)
	}
	return p
}

// publishBodies publishes n messages of size bytes on topic at QoS 1, window at a time, and waits for
// every PUBACK, which must be a success.
func publishBodies(t *testing.T, addr, topic string, n, size, window int) {
	t.Helper()
	pub := dialHostile(t, addr, 5)
	if code := pub.connect(rawpacket.ConnectOptions{ClientID: "bodies-pub", CleanStart: true}); code != 0 {
		t.Fatalf("publisher: CONNACK 0x%02X", code)
	}
	for first := 0; first < n; first += window {
		last := min(first+window, n)
		for i := first; i < last; i++ {
			if err := pub.send(rawpacket.Publish(topic, 1, uint16(i%window+1), bodyPayload(i, size), false)); err != nil {
				t.Fatalf("publish %d: %v", i, err)
			}
		}
		for i := first; i < last; i++ {
			if ack := pub.expect(packets.Puback); ack.ReasonCode != 0 {
				t.Fatalf("PUBACK 0x%02X for message %d", ack.ReasonCode, i)
			}
		}
	}
	pub.nc.Close()
}

// 1,500 messages of 512 KiB queued at QoS 1 for an offline session (750 MiB of bodies) leave the
// broker's memory under 128 MiB while it is idle, and again after a SIGKILL and a restart: the
// bodies are in the file, memory holds their index and a bounded cache. The session then gets
// every message exactly once, whole, in order. Before bodies moved to the file the broker held
// 1.0 GB idle and 1.35 GB after a restart here.
func TestQueuedBodiesStayOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 750 MiB")
	}
	const (
		n        = 1500
		size     = 512 << 10
		boundMiB = 128
		topic    = "bodies/t"
	)
	args := []string{"--sync", "none", "--max-queued-bytes", "1GiB"}
	b := startBroker(t, t.TempDir(), nil, args...)

	sub := dialHostile(t, b.Addr, 5)
	if code := sub.connect(rawpacket.ConnectOptions{ClientID: "bodies-sub", CleanStart: true, SessionExpiry: 3600}); code != 0 {
		t.Fatalf("subscriber: CONNACK 0x%02X", code)
	}
	if err := sub.send(rawpacket.Subscribe(1, topic, 1)); err != nil {
		t.Fatal(err)
	}
	sub.expect(packets.Suback)
	sub.nc.Close() // offline from here: everything is queued

	publishBodies(t, b.Addr, topic, n, size, 16)
	rss := rssSettles(t, b.Proc().Pid(), boundMiB, 30*time.Second)
	t.Logf("RSS idle with %d x %d KiB queued: %d MiB (%s)", n, size>>10, rss, memSummary(t, b.Proc().Pid()))
	if rss >= boundMiB {
		t.Errorf("RSS idle %d MiB, want under %d MiB", rss, boundMiB)
	}

	b.Kill()
	for b.Running() {
		time.Sleep(10 * time.Millisecond)
	}
	b = b.Restart(t, nil, args...)
	rss = rssSettles(t, b.Proc().Pid(), boundMiB, 30*time.Second)
	t.Logf("RSS after the restart: %d MiB (%s)", rss, memSummary(t, b.Proc().Pid()))
	if rss >= boundMiB {
		t.Errorf("RSS after the restart %d MiB, want under %d MiB", rss, boundMiB)
	}

	sub = dialHostile(t, b.Addr, 5)
	if code := sub.connect(rawpacket.ConnectOptions{ClientID: "bodies-sub", SessionExpiry: 3600, ReceiveMaximum: 8}); code != 0 {
		t.Fatalf("subscriber again: CONNACK 0x%02X", code)
	}
	for want := 0; want < n; want++ {
		pk := sub.expect(packets.Publish)
		if !bytes.Equal(pk.Payload, bodyPayload(want, size)) {
			got := -1
			if len(pk.Payload) >= 4 {
				got = int(binary.BigEndian.Uint32(pk.Payload))
			}
			t.Fatalf("delivery %d: payload of %d bytes numbered %d, want message %d whole", want, len(pk.Payload), got, want)
		}
		if err := sub.send(rawpacket.Ack(packets.Puback, pk.PacketID, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if pk, err := sub.next(2 * time.Second); err == nil {
		t.Errorf("after the %d messages the broker sent %s: a duplicate", n, rawpacket.Describe(pk))
	}
	t.Logf("RSS after delivering them: %d MiB (%s)", memKiB(t, b.Proc().Pid(), "VmRSS")>>10, memSummary(t, b.Proc().Pid()))
}

// memSummary is the peak RSS and the RSS's heap (anonymous) and file-mapped parts, in MiB.
func memSummary(t *testing.T, pid int) string {
	return fmt.Sprintf("peak %d MiB, anonymous %d MiB, file-mapped %d MiB",
		memKiB(t, pid, "VmHWM")>>10, memKiB(t, pid, "RssAnon")>>10, memKiB(t, pid, "RssFile")>>10)
}
