package mqtt_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

const healTopic = "heal/t"

// A store whose write finds no room (the kernel's ENOSPC: the log's descriptor is swapped for one
// on /dev/full) is healed in place: the connected client gets DISCONNECT 0x89, the store is
// reopened from the file, Stats counts one failure and one heal, the Server is ready again, and a
// durable subscriber gets what was committed before the failure and after the heal, and not the
// message whose commit failed.
func TestDiskFullHealsInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, addr, served := startServer(t, dir)
	sub := mqtttest.Dial(t, addr, v5)
	sub.Connect(t, "heal-sub", false, expiry)
	sub.SubscribeOK(t, 1, healTopic, 1)
	sub.Disconnect(t)
	publishRetained(t, srv, "before")
	idle := mqtttest.Dial(t, addr, v5)
	idle.Connect(t, "heal-idle", true, 0)

	swapDescriptor(t, filepath.Join(dir, mqtt.LogFile), "/dev/full", os.O_WRONLY)
	err := srv.Publish(context.Background(), mqtt.Message{Topic: healTopic, Payload: []byte("lost"), QoS: 1})
	if !errors.Is(err, inflight.ErrDiskFull) {
		t.Fatalf("Publish on a full disk: %v, want inflight.ErrDiskFull", err)
	}
	if d := idle.Expect(t, packets.Disconnect); d.ReasonCode != 0x89 {
		t.Errorf("connected client: DISCONNECT 0x%02X, want 0x89 Server busy", d.ReasonCode)
	}
	idle.ExpectClosed(t)
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().StoreHeals == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not healed within 10s: %+v", srv.Readiness())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := srv.Stats(); st.StoreFailures != 1 || st.StoreHeals != 1 || !srv.Ready() {
		t.Fatalf("after the heal: failures %d, heals %d, readiness %+v; want 1, 1, ready", st.StoreFailures, st.StoreHeals, srv.Readiness())
	}
	publishRetained(t, srv, "after")
	sub = mqtttest.Dial(t, addr, v5)
	sub.Connect(t, "heal-sub", false, expiry)
	for _, want := range []string{"before", "after"} {
		p := sub.ExpectPublish(t, healTopic, 1, want)
		sub.Puback(p.PacketID)
	}
	sub.ExpectNothing(t, nothing)
	select {
	case err := <-served:
		t.Fatalf("Serve returned while healing: %v", err)
	default:
	}
}

// A store that fails otherwise (EBADF on the write: the log's descriptor swapped for a read-only
// one) cannot be trusted: Serve returns ErrStoreFailed wrapping inflight.ErrIO, the Server is not
// ready and refuses Publish, and a new Server on the same directory recovers what was committed.
func TestIOErrorEndsServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, _, served := startServer(t, dir)
	publishRetained(t, srv, "kept")
	path := filepath.Join(dir, mqtt.LogFile)
	swapDescriptor(t, path, path, os.O_RDONLY)
	if err := srv.Publish(context.Background(), mqtt.Message{Topic: healTopic, Payload: []byte("lost"), QoS: 1, Retain: true}); !errors.Is(err, inflight.ErrIO) {
		t.Fatalf("Publish on a failing disk: %v, want inflight.ErrIO", err)
	}
	select {
	case err := <-served:
		if !errors.Is(err, mqtt.ErrStoreFailed) || !errors.Is(err, inflight.ErrIO) {
			t.Fatalf("Serve returned %v, want ErrStoreFailed wrapping inflight.ErrIO", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after an I/O error")
	}
	if r := srv.Readiness(); srv.Ready() || r.Serving || r.StoreWritable || !errors.Is(r.Err, inflight.ErrIO) {
		t.Errorf("readiness after an I/O error: %+v", r)
	}
	if err := srv.Publish(context.Background(), mqtt.Message{Topic: healTopic, Payload: []byte("x")}); !errors.Is(err, mqtt.ErrStoreFailed) {
		t.Errorf("Publish after the failure: %v, want ErrStoreFailed", err)
	}
	_ = srv.Close()

	again, err := mqtt.New(mqtt.Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("reopen after the I/O error: %v", err)
	}
	defer again.Close()
	if st := again.Stats(); st.Retained != 1 {
		t.Errorf("after the restart: %d retained messages, want 1 (kept)", st.Retained)
	}
}

// startServer serves a new Server on 127.0.0.1 and waits until it is ready.
func startServer(t *testing.T, dir string) (*mqtt.Server, string, <-chan error) {
	t.Helper()
	srv, err := mqtt.New(mqtt.Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	deadline := time.Now().Add(5 * time.Second)
	for !srv.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %+v", srv.Readiness())
		}
		time.Sleep(time.Millisecond)
	}
	return srv, ln.Addr().String(), served
}

// publishRetained publishes payload retained at QoS 1 and fails t unless it is committed.
func publishRetained(t *testing.T, srv *mqtt.Server, payload string) {
	t.Helper()
	msg := mqtt.Message{Topic: healTopic, Payload: []byte(payload), QoS: 1, Retain: true}
	if err := srv.Publish(context.Background(), msg); err != nil {
		t.Fatalf("publish %s: %v", payload, err)
	}
}

// swapDescriptor puts a descriptor on other, opened with flag, under the number through which this
// process has path open (bbolt's), so that its writes fail as on a failing disk.
func swapDescriptor(t *testing.T, path, other string, flag int) {
	t.Helper()
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == want {
			fd, _ = strconv.Atoi(e.Name())
		}
	}
	if fd == -1 {
		t.Fatalf("no descriptor of this process is open on %s", path)
	}
	f, err := os.OpenFile(other, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Dup3(int(f.Fd()), fd, syscall.O_CLOEXEC); err != nil {
		t.Fatalf("dup3 onto descriptor %d: %v", fd, err)
	}
}
