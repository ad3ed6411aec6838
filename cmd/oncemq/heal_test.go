//go:build linux

package main

// A store that fails heals without a person. On a full disk the broker disconnects every client,
// refuses CONNECTs, and reopens its store from the file once there is room again, in the same
// process; on an I/O error it exits non-zero at once and a restart recovers. The disks fill for
// real: a small tmpfs filled by a file next to the store, or the broker's file size limit.

import (
	"errors"
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

// healTimeout bounds the wait for the broker to serve again once space is back: the reopening
// backs off to at most 5 s between attempts.
const healTimeout = 30 * time.Second

// diskFiller fills the broker's disk and frees it again.
type diskFiller interface {
	fill(t *testing.T)
	free(t *testing.T)
}

// On a tmpfs of 8 MiB filled by a file next to the store, the broker refuses and disconnects, and
// serves again, same process, once the file is removed; nothing acknowledged is lost or duplicated.
// Where mounting is not allowed, the broker's file size limit fills the disk instead.
func TestDiskFullHealsOnTmpfs(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	var b *oncemqtest.Broker
	var disk diskFiller
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=8m"); err != nil {
		t.Logf("mount a tmpfs on %s: %v; filling the disk with a file size limit instead", mnt, err)
		b = startBroker(t, filepath.Join(mnt, "data"), nil)
		disk = &sizeLimit{b: b}
	} else {
		t.Cleanup(func() {
			if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", mnt, err)
			}
		})
		b = startBroker(t, filepath.Join(mnt, "data"), nil)
		disk = &fillerFile{path: filepath.Join(mnt, "filler")}
	}
	testDiskFullHeals(t, b, disk)
}

// The same with the broker's file size limit (RLIMIT_FSIZE) lowered to the size of its store: the
// store's growth fails with EFBIG, which bbolt reports as text only, and the broker heals once the
// limit is raised.
func TestFileSizeLimitHeals(t *testing.T) {
	t.Parallel()
	b := startBroker(t, t.TempDir(), nil)
	testDiskFullHeals(t, b, &sizeLimit{b: b})
}

// testDiskFullHeals fills the disk under b while a publisher publishes to an offline durable
// subscriber, and checks each step of the heal (see the README, "When the disk fills or fails").
func testDiskFullHeals(t *testing.T, b *oncemqtest.Broker, disk diskFiller) {
	pid := b.Proc().Pid()
	watcher := dialRaw(t, b.Addr, "watcher")
	watcher.connect(failWatcherID, false)
	watcher.subscribe(1, crashTopic, 2)
	watcher.write(mqttclient.Disconnect(0))
	watcher.untilClosed()
	pub := dialRaw(t, b.Addr, "publisher")
	pub.connectClean("fail-publisher")
	idle := dialRaw(t, b.Addr, "idle 5.0 client")
	idle.connect("fail-idle", false)
	v311 := dialV311(t, b.Addr, "fail-v311")

	f := &filler{c: pub, acked: map[string]bool{}}
	if f.fill(failBeforeCap) {
		t.Fatalf("the store failed before the disk was filled:\n%s", b.Log())
	}
	disk.fill(t)
	if !f.fill(failMaxFill) {
		t.Fatalf("the store did not fail within %d messages of %d bytes on the full disk", failMaxFill, failPayload)
	}
	t.Logf("the store failed after %d acknowledged messages: %s", len(f.acked), f.ending)

	// Every client is disconnected: 5.0 with DISCONNECT 0x89 Server busy (0x88 is not a
	// DISCONNECT code [MQTT-3.14.2-1]), 3.1.1 without a word.
	if got := idle.untilClosed(); len(got) != 1 || got[0].FixedHeader.Type != packets.Disconnect || got[0].ReasonCode != 0x89 {
		t.Errorf("idle 5.0 client: got %d packets (%v) before the close, want DISCONNECT 0x89", len(got), payloads(got))
	}
	checkClosedSilently(t, v311)
	// Not ready: every CONNECT is refused with Server unavailable, a memory-only session too.
	refusedConnect(t, b.Addr, packets.Properties{SessionExpiryInterval: sessionExpiry, SessionExpiryIntervalFlag: true}, false)
	refusedConnect(t, b.Addr, packets.Properties{}, true)
	refusedConnectV311(t, b.Addr)
	if !b.Running() || b.Proc().Pid() != pid {
		t.Fatalf("the broker died on a full disk: %v", b.Proc().Exit())
	}
	if log := b.Log(); !strings.Contains(log, "disk full") {
		t.Fatalf("the broker's log does not say the disk is full:\n%s", log)
	}

	awaitLog(t, b, "store not reopened yet; retrying") // the reopening tries while the disk is full
	disk.free(t)
	awaitServing(t, b)
	if !b.Running() || b.Proc().Pid() != pid {
		t.Fatalf("the broker was restarted (pid %d, was %d) instead of healing", b.Proc().Pid(), pid)
	}
	if log := b.Log(); !strings.Contains(log, "store healed") {
		t.Errorf("the broker's log does not say the store healed:\n%s", log)
	}
	checkDelivered(t, b, f, nil)
}

// awaitLog waits until the broker's log has line in it.
func awaitLog(t *testing.T, b *oncemqtest.Broker, line string) {
	t.Helper()
	deadline := time.Now().Add(healTimeout)
	for !strings.Contains(b.Log(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("the broker's log does not say %q within %v:\n%s", line, healTimeout, b.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitServing connects until the broker accepts a CONNECT again; every refusal meanwhile must be
// Server unavailable.
func awaitServing(t *testing.T, b *oncemqtest.Broker) {
	t.Helper()
	deadline := time.Now().Add(healTimeout)
	for attempt := 1; ; attempt++ {
		c := dialRaw(t, b.Addr, "client after space came back")
		c.connectCleanWith(packets.Properties{})
		ack := c.expect(packets.Connack, 0)
		c.close()
		switch {
		case ack.ReasonCode == 0:
			t.Logf("serving again after %d CONNECTs", attempt)
			return
		case ack.ReasonCode != 0x88:
			t.Fatalf("CONNECT while healing: got %s, want 0x88 or success", describe(&ack))
		case time.Now().After(deadline):
			t.Fatalf("the broker does not serve %v after space came back:\n%s", healTimeout, b.Log())
		}
		time.Sleep(50 * time.Millisecond) // pace the attempts; the deadline above is the bound
	}
}

// refusedConnect sends a 5.0 CONNECT with props (and Clean Start clean) and expects CONNACK 0x88
// Server unavailable, then the close.
func refusedConnect(t *testing.T, addr string, props packets.Properties, clean bool) {
	t.Helper()
	c := dialRaw(t, addr, "client while the disk is full")
	c.write(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect:     packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: "fail-late", Clean: clean},
		Properties:  props,
	})
	c.expectAck(packets.Connack, 0, 0x88)
	if got := c.untilClosed(); len(got) > 0 {
		t.Errorf("after CONNACK 0x88: got %s, want the close", describe(&got[0]))
	}
}

// connectCleanWith sends a 5.0 CONNECT with Clean Start 1 and props.
func (c *rawClient) connectCleanWith(props packets.Properties) {
	c.t.Helper()
	c.write(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect:     packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: "fail-probe", Clean: true},
		Properties:  props,
	})
}

// refusedConnectV311 expects 3.1.1's CONNACK 0x03 Server unavailable.
func refusedConnectV311(t *testing.T, addr string) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, rawExpectTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(rawExpectTimeout))
	connect := append(append(mqttString("MQTT"), 4, 0x02, 0, 60), mqttString("fail-v311-late")...)
	if _, err := nc.Write(frame(0x10, connect)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(nc)
	if string(got) != "\x20\x02\x00\x03" {
		t.Errorf("3.1.1 CONNECT while the disk is full: got % x (%v), want CONNACK 20 02 00 03 and the close", got, err)
	}
}

// checkClosedSilently expects the broker to close the 3.1.1 connection nc without sending a byte.
func checkClosedSilently(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetDeadline(time.Now().Add(rawExpectTimeout))
	rest, err := io.ReadAll(nc)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("3.1.1 client: still connected %v after the store failed", rawExpectTimeout)
	case err != nil && !errors.Is(err, syscall.ECONNRESET):
		t.Errorf("3.1.1 client: %v", err)
	case len(rest) > 0:
		t.Errorf("3.1.1 client: got % x before the close, want nothing", rest)
	}
}

// fillerFile fills a file system with one file, written until the file system has no room.
type fillerFile struct{ path string }

func (f *fillerFile) fill(t *testing.T) {
	t.Helper()
	file, err := os.Create(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	chunk := make([]byte, 64<<10)
	for {
		_, err := file.Write(chunk)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatalf("fill %s: %v", f.path, err)
		}
	}
	st, _ := file.Stat()
	t.Logf("the file system is full: %s holds %d bytes", filepath.Base(f.path), st.Size())
}

func (f *fillerFile) free(t *testing.T) {
	t.Helper()
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
}

// sizeLimit fills the disk by lowering the broker's RLIMIT_FSIZE to the size of its store.
type sizeLimit struct{ b *oncemqtest.Broker }

func (l *sizeLimit) fill(t *testing.T) {
	limitFileSize(t, l.b, filepath.Join(l.b.DataDir, "oncemq.db"))
}

func (l *sizeLimit) free(t *testing.T) {
	t.Helper()
	lim := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	var old unix.Rlimit
	if err := unix.Prlimit(l.b.Proc().Pid(), unix.RLIMIT_FSIZE, nil, &old); err != nil {
		t.Fatal(err)
	}
	lim.Cur, lim.Max = old.Max, old.Max
	if err := unix.Prlimit(l.b.Proc().Pid(), unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		t.Fatalf("raise the broker's RLIMIT_FSIZE: %v", err)
	}
}

// An I/O error in a commit (a failed fdatasync, injected by the failpoint build's sync failpoint
// when the test creates its trigger file) ends the broker at once with exit status 1; restarted on
// the same data, it recovers every acknowledged message, once, and none of the one that failed.
func TestIOErrorExits(t *testing.T) {
	t.Parallel()
	trigger := filepath.Join(t.TempDir(), "fail-fsync-now")
	b := startCrashableBroker(t, t.TempDir(), []string{"ONCEMQ_FAIL_FSYNC=" + trigger})
	watcher := dialRaw(t, b.Addr, "watcher")
	watcher.connect(failWatcherID, false)
	watcher.subscribe(1, crashTopic, 2)
	watcher.write(mqttclient.Disconnect(0))
	watcher.untilClosed()
	pub := dialRaw(t, b.Addr, "publisher")
	pub.connectClean("fail-publisher")
	f := &filler{c: pub, acked: map[string]bool{}}
	if f.fill(failBeforeCap) {
		t.Fatalf("the store failed before the trigger:\n%s", b.Log())
	}
	if err := os.WriteFile(trigger, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !f.fill(1) {
		t.Fatalf("a publish after the trigger was acknowledged")
	}
	e, err := b.Proc().Wait(oncemqtest.ExitTimeout)
	if err != nil {
		t.Fatalf("the broker did not exit after the I/O error: %v", err)
	}
	if e.Code != 1 || e.Signal != 0 {
		t.Fatalf("the broker ended with %v, want exit status 1", e)
	}
	if log := b.Log(); !strings.Contains(log, "I/O error") || !strings.Contains(log, "exiting") {
		t.Errorf("the broker's log does not say why it exits:\n%s", log)
	}
	b = b.Restart(t, nil)
	checkDelivered(t, b, f, nil)
}
