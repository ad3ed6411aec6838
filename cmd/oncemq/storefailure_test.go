//go:build linux

package main

// Store failure, injected where a real disk fails: the broker child's file size limit
// (RLIMIT_FSIZE) is lowered to the size of its data file while it runs, so that the next commit
// that must grow the file fails with EFBIG. A Go program does not die of the SIGXFSZ that comes
// with it: the runtime catches the signal and, with no os/signal.Notify for it, does nothing (see
// the os/signal package documentation), so the write just fails.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"golang.org/x/sys/unix"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

const (
	failWatcherID  = "fail-watcher"
	failPayload    = 4096             // bytes of padding per message: the file must grow soon
	failMaxFill    = 3000             // messages published at most before the store must have failed
	failFillTime   = 60 * time.Second // and for at most this long
	failBeforeCap  = 8                // messages committed before the limit is lowered
	failRefusedTry = 3                // QoS 1 and QoS 2 publishes checked for refusal after the failure
)

// A store that fails is never answered with an acknowledgement (DESIGN §1, checklist B3, B15): the
// PUBLISH whose commit failed gets no acknowledgement; later 5.0 QoS 1/2 PUBLISHes are refused with
// PUBACK/PUBREC 0x80 on a connection that stays up, and a 3.1.1 QoS 1 PUBLISH, which has no way to
// be refused, closes its connection without PUBACK. The broker does not die. After a restart
// without the limit, every message that WAS acknowledged is there exactly once, and none that was
// refused.
func TestStoreFailureRefusesQoS12(t *testing.T) {
	t.Parallel()
	b := startBroker(t, t.TempDir(), nil)
	// A persistent subscriber, offline while the store fails: every message acknowledged to the
	// publisher is queued for it in the store.
	watcher := dialRaw(t, b.Addr, "watcher")
	watcher.connect(failWatcherID, false)
	watcher.subscribe(1, crashTopic, 2) // rawClient publishes on crashTopic
	watcher.write(mqttclient.Disconnect(0))
	watcher.untilClosed()

	pub := dialRaw(t, b.Addr, "publisher")
	pub.connectClean("fail-publisher")
	// The clients that publish after the failure connect before it: a CONNECT needs a commit too.
	v5 := dialRaw(t, b.Addr, "5.0 publisher after the failure")
	v5.connectClean("fail-refused")
	v311 := dialV311(t, b.Addr, "fail-v311")
	f := &filler{c: pub, acked: map[string]bool{}}
	if f.fill(failBeforeCap) {
		t.Fatalf("the store failed before any limit was set:\n%s", b.Log())
	}
	limitFileSize(t, b, filepath.Join(b.DataDir, "oncemq.db"))
	if !f.fill(failMaxFill) {
		t.Fatalf("the store did not fail within %d messages of %d bytes under the file size limit", failMaxFill, failPayload)
	}
	t.Logf("the store failed after %d acknowledged messages: %s", len(f.acked), f.ending)
	if !b.Running() {
		t.Fatalf("the broker died instead of refusing: %v", b.Proc().Exit())
	}
	// The broker logged the failure before it answered, but its output reaches the test through a
	// pipe: wait for it.
	for deadline := time.Now().Add(rawExpectTimeout); !strings.Contains(b.Log(), "file too large") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if log := b.Log(); !strings.Contains(log, "file too large") {
		t.Fatalf("the broker's log does not show the EFBIG that should have failed the store:\n%s", log)
	}

	refused := checkRefusedV5(v5)
	checkClosedV311(t, v311)
	if !b.Running() {
		t.Fatalf("the broker died while refusing: %v", b.Proc().Exit())
	}

	e, err := b.Proc().Stop(oncemqtest.ExitTimeout)
	t.Logf("broker with the failed store stopped: %v (%v)", e, err)
	b = b.Restart(t, nil)
	checkDelivered(t, b, f, refused)
}

// connectClean connects with Clean Start 1 and no Session Expiry: a session that lives in memory
// only and ends with the connection.
func (c *rawClient) connectClean(clientID string) {
	c.t.Helper()
	c.write(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect:     packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: clientID, Clean: true},
	})
	if ack := c.expect(packets.Connack, 0); ack.ReasonCode != 0 {
		c.t.Fatalf("%s: got %s, want success", c.name, describe(&ack))
	}
}

// nextOrEnd returns the next packet, or ok false if the connection ended first. Nothing within
// rawExpectTimeout fails the test.
func (c *rawClient) nextOrEnd(waitingFor string) (pk packets.Packet, ok bool) {
	c.t.Helper()
	select {
	case r := <-c.recv:
		return r.pk, r.err == nil
	case <-time.After(rawExpectTimeout):
		c.t.Fatalf("%s: nothing received within %v while waiting for %s", c.name, rawExpectTimeout, waitingFor)
	}
	panic("unreachable")
}

// filler publishes big messages one at a time, QoS 1 and QoS 2 in turn, each after the previous
// one's flow ended, and records those acknowledged with success.
type filler struct {
	c      *rawClient
	next   int
	acked  map[string]bool // message key -> acknowledged (PUBACK or PUBREC < 0x80)
	ending string          // how the store's failure showed
}

// fill publishes up to n messages and reports whether the store failed: a refusal, or the
// connection closed, instead of an acknowledgement.
func (f *filler) fill(n int) (failed bool) {
	deadline := time.Now().Add(failFillTime)
	for range n {
		if time.Now().After(deadline) {
			f.c.t.Fatalf("publishing for %v without the store failing", failFillTime)
		}
		f.next++
		key, id, qos := fmt.Sprintf("m%05d", f.next), uint16(f.next%60000+1), byte(1+f.next%2)
		f.c.publish(id, key+strings.Repeat("x", failPayload), qos, false)
		pk, ok := f.c.nextOrEnd("the acknowledgement of " + key)
		if !f.acknowledged(pk, ok, qos, id, key) {
			return true
		}
		if qos == 2 {
			f.c.ack(packets.Pubrel, id)
			if pk, ok := f.c.nextOrEnd("PUBCOMP of " + key); !ok || pk.FixedHeader.Type != packets.Pubcomp {
				f.ending = fmt.Sprintf("%s: PUBREC, then %s instead of PUBCOMP (ended %t)", key, describe(&pk), !ok)
				return true // the id's removal could not be committed; the message was acknowledged
			}
		}
	}
	return false
}

// acknowledged checks the answer to a publish of key and records a success.
func (f *filler) acknowledged(pk packets.Packet, ok bool, qos byte, id uint16, key string) bool {
	want := byte(packets.Puback)
	if qos == 2 {
		want = packets.Pubrec
	}
	switch {
	case !ok:
		f.ending = key + ": connection closed without acknowledgement"
	case pk.FixedHeader.Type == packets.Disconnect:
		f.ending = fmt.Sprintf("%s: %s", key, describe(&pk))
	case pk.FixedHeader.Type != want || pk.PacketID != id:
		f.c.t.Fatalf("%s: got %s, want %s for id %d", key, describe(&pk), packets.PacketNames[want], id)
	case pk.ReasonCode >= 0x80:
		f.ending = fmt.Sprintf("%s: refused with %s", key, describe(&pk))
	case pk.ReasonCode != 0:
		f.c.t.Fatalf("%s: got %s, want reason 0x00: the watcher's subscription matches", key, describe(&pk))
	default:
		f.acked[key] = true
		return true
	}
	return false
}

// limitFileSize lowers the broker's RLIMIT_FSIZE to the present size of file: from now on the
// file cannot grow.
func limitFileSize(t *testing.T, b *oncemqtest.Broker, file string) {
	t.Helper()
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	var old unix.Rlimit
	lim := unix.Rlimit{Cur: uint64(st.Size())}
	if err := unix.Prlimit(b.Proc().Pid(), unix.RLIMIT_FSIZE, nil, &old); err != nil {
		t.Fatalf("read the broker's RLIMIT_FSIZE: %v", err)
	}
	lim.Max = old.Max
	if err := unix.Prlimit(b.Proc().Pid(), unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		t.Fatalf("lower the broker's RLIMIT_FSIZE to %d: %v", lim.Cur, err)
	}
	t.Logf("the broker's file size limit is now %d bytes, the size of %s", lim.Cur, filepath.Base(file))
}

// checkRefusedV5 publishes at QoS 1 and 2 from the 5.0 client c: each must be refused with 0x80,
// never acknowledged, and the connection stays up (PINGREQ still answered). It returns the refused
// messages' keys.
func checkRefusedV5(c *rawClient) []string {
	c.t.Helper()
	var keys []string
	for i := range failRefusedTry {
		for _, qos := range []byte{1, 2} {
			id := uint16(2*i + int(qos))
			key := fmt.Sprintf("refused-q%d-%d", qos, i)
			keys = append(keys, key)
			c.publish(id, key, qos, false)
			typ := byte(packets.Puback)
			if qos == 2 {
				typ = packets.Pubrec
			}
			c.expectAck(typ, id, 0x80)
		}
	}
	c.sync()
	return keys
}

// dialV311 connects a 3.1.1 client with CleanSession 1, scripted byte by byte (the test's own
// client speaks 5.0 only).
func dialV311(t *testing.T, addr, clientID string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, rawExpectTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(rawExpectTimeout))
	connect := append(append(mqttString("MQTT"), 4, 0x02, 0, 60), mqttString(clientID)...) // level 4, CleanSession
	if _, err := nc.Write(frame(0x10, connect)); err != nil {
		t.Fatal(err)
	}
	connack := make([]byte, 4)
	if _, err := io.ReadFull(nc, connack); err != nil || string(connack) != "\x20\x02\x00\x00" {
		t.Fatalf("3.1.1 CONNACK: % x, %v; want 20 02 00 00", connack, err)
	}
	return nc
}

// checkClosedV311 publishes at QoS 1 from the 3.1.1 connection nc: 3.1.1 has no refusal, so the
// broker must close the connection, and send no PUBACK before it does.
func checkClosedV311(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetDeadline(time.Now().Add(rawExpectTimeout))
	publish := append(append(mqttString("fail/v311"), 0, 1), "v311"...) // packet id 1
	if _, err := nc.Write(frame(0x32, publish)); err != nil {           // QoS 1
		t.Fatal(err)
	}
	rest, err := io.ReadAll(nc)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("3.1.1 QoS 1 PUBLISH on a failed store: the connection is still open after %v (got % x)", rawExpectTimeout, rest)
	case err != nil && !errors.Is(err, syscall.ECONNRESET):
		t.Fatalf("3.1.1 connection: %v", err)
	case len(rest) > 0:
		t.Fatalf("3.1.1 QoS 1 PUBLISH on a failed store: got % x before the close, want nothing (no PUBACK)", rest)
	}
}

// mqttString is an MQTT UTF-8 string: a 2-byte length, then the bytes.
func mqttString(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }

// frame is a packet with a short body (< 128 bytes): fixed header byte, remaining length, body.
func frame(header byte, body []byte) []byte { return append([]byte{header, byte(len(body))}, body...) }

// checkDelivered resumes the watcher on the restarted broker and checks that it receives every
// acknowledged message exactly once, and no refused one, before a sentinel published last.
func checkDelivered(t *testing.T, b *oncemqtest.Broker, f *filler, refused []string) {
	watcher := resume(t, b, "watcher after restart", failWatcherID)
	pub := dialRaw(t, b.Addr, "publisher after restart")
	pub.connectClean("fail-sentinel")
	pub.publishQoS2(1, sentinel)
	counts := map[string]int{}
	for _, p := range payloads(watcher.receiveUntilSentinel()) {
		counts[p[:min(len(p), 6)]]++
	}
	for key := range f.acked {
		if counts[key] != 1 {
			t.Errorf("acknowledged message %s delivered %d times after the restart, want exactly once", key, counts[key])
		}
		delete(counts, key)
	}
	for _, key := range refused {
		if n := counts[key[:6]]; n > 0 || counts[key] > 0 {
			t.Errorf("refused message %s delivered after the restart", key)
		}
	}
	for key, n := range counts { // the message whose commit failed may only be absent
		t.Errorf("unacknowledged message %s delivered %d times after the restart; its commit failed", key, n)
	}
}
