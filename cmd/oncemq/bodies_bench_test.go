package main

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/rawpacket"
)

// BenchmarkRestartMillionQueued queues 1,000,000 messages (64 bytes, QoS 1) across 1,000 offline
// sessions of the release binary, kills it (SIGKILL), starts it again and reports how long it took
// to accept connections (restart_s), its resident memory then (rss_MiB) and its peak (peak_MiB);
// then every session takes its 1,000 messages, each checked to come exactly once, in order. It is a
// measurement, not a CI test: run it alone, once:
//
//	go test -run '^$' -bench BenchmarkRestartMillionQueued -benchtime 1x -timeout 30m ./cmd/oncemq/
func BenchmarkRestartMillionQueued(b *testing.B) {
	const (
		sessions   = 1000
		perSession = 1000
		publishers = 4
	)
	args := []string{"--sync", "none", "--max-queued", "100000"}
	br := startBroker(b, b.TempDir(), nil, args...)
	for i := range sessions {
		c := dialHostile(b, br.Addr, 5)
		if code := c.connect(rawpacket.ConnectOptions{ClientID: millionClient(i), CleanStart: true, SessionExpiry: 86400}); code != 0 {
			b.Fatalf("session %d: CONNACK 0x%02X", i, code)
		}
		if err := c.send(rawpacket.Subscribe(1, millionTopic(i), 1)); err != nil {
			b.Fatal(err)
		}
		c.expect(packets.Suback)
		c.nc.Close()
	}
	start := time.Now()
	parallel(b, publishers, func(w int) error {
		c := dialHostile(b, br.Addr, 5)
		if code := c.connect(rawpacket.ConnectOptions{ClientID: fmt.Sprintf("million-pub-%d", w), CleanStart: true}); code != 0 {
			return fmt.Errorf("publisher %d: CONNACK 0x%02X", w, code)
		}
		const window = 64
		var sent int
		for s := w; s < sessions; s += publishers {
			for m := range perSession {
				if err := c.send(rawpacket.Publish(millionTopic(s), 1, uint16(sent%window+1), millionPayload(s, m), false)); err != nil {
					return err
				}
				if sent++; sent%window == 0 {
					if err := expectAcks(c, window); err != nil {
						return err
					}
				}
			}
		}
		return expectAcks(c, sent%window)
	})
	b.Logf("published %d messages in %s", sessions*perSession, time.Since(start).Round(time.Millisecond))

	br.Kill()
	for br.Running() {
		time.Sleep(10 * time.Millisecond)
	}
	b.ResetTimer()
	start = time.Now()
	br = br.Restart(b, nil, args...)
	restart := time.Since(start)
	b.StopTimer()
	pid := br.Proc().Pid()
	// The binary hands garbage back to the OS once it has been quiet for a few seconds (serve's
	// trimming); start-up's is handed back then.
	rss := rssSettles(b, pid, 0, 15*time.Second)
	peak := memKiB(b, pid, "VmHWM") >> 10
	b.ReportMetric(restart.Seconds(), "restart_s")
	b.ReportMetric(float64(rss), "rss_MiB")
	b.ReportMetric(float64(peak), "peak_MiB")
	b.Logf("RSS measured %s after the restart began", time.Since(start).Round(time.Second))
	b.Logf("restart to accepting connections %s, RSS %d MiB (peak %d MiB, anonymous %d MiB, file-mapped %d MiB)",
		restart.Round(time.Millisecond), rss, peak, memKiB(b, pid, "RssAnon")>>10, memKiB(b, pid, "RssFile")>>10)

	start = time.Now()
	parallel(b, publishers, func(w int) error {
		for s := w; s < sessions; s += publishers {
			if err := takeMillion(b, br.Addr, s, perSession); err != nil {
				return err
			}
		}
		return nil
	})
	b.Logf("delivered %d messages exactly once in %s; RSS %d MiB", sessions*perSession,
		time.Since(start).Round(time.Millisecond), memKiB(b, pid, "VmRSS")>>10)
}

func millionClient(i int) string { return fmt.Sprintf("million-%04d", i) }
func millionTopic(i int) string  { return fmt.Sprintf("million/%04d", i) }

// millionPayload is 64 bytes naming the session and the message.
func millionPayload(s, m int) []byte {
	return fmt.Appendf(nil, "%-64s", fmt.Sprintf("session %04d message %04d", s, m))
}

// expectAcks reads n PUBACKs, each a success.
func expectAcks(c *hostileClient, n int) error {
	for range n {
		pk, err := c.next(60 * time.Second)
		if err != nil {
			return err
		}
		if pk.FixedHeader.Type != packets.Puback || pk.ReasonCode != 0 {
			return fmt.Errorf("want PUBACK 0x00, got %s", rawpacket.Describe(pk))
		}
	}
	return nil
}

// takeMillion resumes session s and checks that its n messages come once each, in order.
func takeMillion(b *testing.B, addr string, s, n int) error {
	c := dialHostile(b, addr, 5)
	defer c.nc.Close()
	if code := c.connect(rawpacket.ConnectOptions{ClientID: millionClient(s), SessionExpiry: 86400, ReceiveMaximum: 256}); code != 0 {
		return fmt.Errorf("session %d: CONNACK 0x%02X", s, code)
	}
	for m := range n {
		pk, err := c.next(60 * time.Second)
		if err != nil {
			return fmt.Errorf("session %d message %d: %w", s, m, err)
		}
		if pk.FixedHeader.Type != packets.Publish || string(pk.Payload) != string(millionPayload(s, m)) {
			return fmt.Errorf("session %d: want message %d, got %s %q", s, m, rawpacket.Describe(pk), pk.Payload)
		}
		if err := c.send(rawpacket.Ack(packets.Puback, pk.PacketID, 0)); err != nil {
			return err
		}
	}
	if pk, err := c.next(500 * time.Millisecond); err == nil {
		return fmt.Errorf("session %d: after its %d messages, %s: a duplicate", s, n, rawpacket.Describe(pk))
	}
	return nil
}

// parallel runs fn(0..n-1) at once and fails b with their errors.
func parallel(b *testing.B, n int, fn func(w int) error) {
	b.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = fn(w)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
}
