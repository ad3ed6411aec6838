package main

// Crash tests of the store's checkpoint (inflight/wal.go): the broker dies by SIGKILL before the
// checkpoint's bbolt commit (the log alone holds the acknowledged messages), after it and before
// the log is emptied (both hold them, the log index says which records the file covers), and after
// the log is emptied. Each time every message whose PUBREC was received is delivered exactly once
// after the restart.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
)

func TestCrashInsideCheckpoint(t *testing.T) {
	for _, point := range inflight.CrashPoints {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			testCrashInsideCheckpoint(t, point)
		})
	}
}

// Publisher states of one QoS 2 message.
const (
	qos2Sent     = iota // PUBLISH sent, no PUBREC yet
	qos2Released        // PUBREC received, PUBREL sent
	qos2Complete        // PUBCOMP received
)

func testCrashInsideCheckpoint(t *testing.T, point string) {
	const n = 20
	dir := t.TempDir()
	b := startCrashableBroker(t, dir, []string{crashEnv + "=" + point})
	sub := dialRaw(t, b.Addr, "subscriber")
	sub.connect(crashSubID, false)
	sub.subscribe(1, crashTopic, 2)
	sub.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}})
	sub.close()
	pub := dialRaw(t, b.Addr, "publisher")
	pub.connect(crashPubID, false)

	// The first checkpoint comes a second after the first commit, or at the 10,000th record: the
	// broker may die at any step here. The publisher goes on until it does, or until all n are
	// complete; then the idle broker checkpoints, and dies.
	state := map[int]int{}
	for i := 1; i <= n; i++ {
		if pub.conn.Write(mqttclient.Publish(crashTopic, 2, uint16(i), []byte(fmt.Sprint(i)), false)) != nil {
			break
		}
		state[i] = qos2Sent
		if !pub.tryExpect(packets.Pubrec, uint16(i)) {
			break
		}
		state[i] = qos2Released
		if pub.conn.Write(mqttclient.Ack(packets.Pubrel, uint16(i), 0)) != nil || !pub.tryExpect(packets.Pubcomp, uint16(i)) {
			break
		}
		state[i] = qos2Complete
	}
	b.WaitKilled(t)
	pub.close()
	// The first checkpoint is of the first segment, oncemq.wal: emptied (zeros, preallocated)
	// only after the reset.
	data, err := os.ReadFile(filepath.Join(dir, mqtt.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if empty := !slices.ContainsFunc(data, func(b byte) bool { return b != 0 }); empty != (point == inflight.CrashAfterLogReset) {
		t.Fatalf("first log segment empty: %v at a crash %s", empty, point)
	}

	b = b.Restart(t, nil)
	pub = resume(t, b, "publisher after restart", crashPubID)
	for i := 1; i <= n; i++ {
		s, sent := state[i]
		switch {
		case !sent:
			pub.publishQoS2(uint16(i), fmt.Sprint(i))
		case s == qos2Sent: // a correct client resends with DUP and the same id
			pub.publish(uint16(i), fmt.Sprint(i), 2, true)
			pub.expectAck(packets.Pubrec, uint16(i), 0x00)
			pub.ack(packets.Pubrel, uint16(i))
			pub.expectAck(packets.Pubcomp, uint16(i), 0x00)
		case s == qos2Released: // and resends PUBREL; the id may be released already (0x92)
			pub.ack(packets.Pubrel, uint16(i))
			pub.expect(packets.Pubcomp, uint16(i))
		}
	}
	sub = resume(t, b, "subscriber after restart", crashSubID)
	pub.publishQoS2(n+1, sentinel)
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprint(i + 1)
	}
	checkOnce(t, sub.receiveUntilSentinel(), want...)
	// Before the checkpoint's commit the log alone has the records. (After it, records appended
	// to the other segment meanwhile may be replayed too, so there is nothing to assert there.)
	if point == inflight.CrashBeforeCheckpoint && !strings.Contains(b.Log(), "log replayed") {
		t.Errorf("crash %s: the log was not replayed at restart:\n%s", point, b.Log())
	}
}

// tryExpect waits for the ack typ of id; false if the connection ends first (the broker died).
func (c *rawClient) tryExpect(typ byte, id uint16) bool {
	c.t.Helper()
	select {
	case r := <-c.recv:
		if r.err != nil {
			return false
		}
		if r.pk.FixedHeader.Type != typ || r.pk.PacketID != id {
			c.t.Fatalf("%s: got %s, want type %d for id %d", c.name, describe(&r.pk), typ, id)
		}
		return true
	case <-time.After(rawExpectTimeout):
		c.t.Fatalf("%s: nothing for %v", c.name, rawExpectTimeout)
		return false
	}
}
