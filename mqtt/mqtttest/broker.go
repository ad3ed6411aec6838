// Package mqtttest runs a real oncemq broker for tests and talks to it packet by packet, the way
// net/http/httptest runs a real HTTP server.
//
// StartBroker listens on 127.0.0.1 port 0 with its state in t.TempDir() and shuts down in
// t.Cleanup, which then reopens the data file and fails the test if the store breaks one of its
// invariants; Restart stops it and opens a new one on the same data directory. Dial returns a
// raw-packet client whose helpers (Connect, Publish, Pubrel, Subscribe, Expect...) make protocol
// scripts read like the spec, in MQTT 3.1.1 (version 4) or 5.0 (version 5).
package mqtttest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/oncemq/oncemq/mqtt"
)

// Option changes the configuration of a broker started by StartBroker.
type Option func(*mqtt.Options)

// WithOptions lets f change any field of the broker's options, hooks included. DataDir is set
// before f runs. The broker always listens on 127.0.0.1 port 0.
func WithOptions(f func(*mqtt.Options)) Option { return Option(f) }

// WithDataDir uses dir instead of a fresh t.TempDir(), to start on state left by another broker.
func WithDataDir(dir string) Option { return func(c *mqtt.Options) { c.DataDir = dir } }

// WithReceiveMaximum sets how many QoS 1/2 PUBLISHes a client may have unacknowledged.
func WithReceiveMaximum(n int) Option { return func(c *mqtt.Options) { c.ReceiveMaximum = n } }

// WithMaxPacketSize sets the largest packet the broker accepts.
func WithMaxPacketSize(n int) Option { return func(c *mqtt.Options) { c.MaxPacketSize = n } }

// WithMaxQueued sets the per-session queue bound.
func WithMaxQueued(n int) Option { return func(c *mqtt.Options) { c.MaxQueued = n } }

// WithConnectTimeout sets the time allowed between accept and CONNECT.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *mqtt.Options) { c.ConnectTimeout = d }
}

// shutdownTimeout bounds Shutdown in Stop and Restart.
const shutdownTimeout = 10 * time.Second

// Broker is a broker started by StartBroker.
type Broker struct {
	// Dir is the data directory; it stays the same across restarts.
	Dir string

	cfg  mqtt.Options
	logs *logBuffer

	mu       sync.Mutex // guards the following
	srv      *mqtt.Server
	addr     string
	serveErr chan error
}

// StartBroker starts a broker on 127.0.0.1:0 with its state in a new t.TempDir(), serving in a
// goroutine until t's cleanup shuts it down and checks the store it left (see CheckStore). Unless an option sets a Logger, the broker logs at
// debug level into a buffer whose end is printed if the test fails.
func StartBroker(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	b := &Broker{logs: &logBuffer{}}
	b.cfg = mqtt.Options{DataDir: t.TempDir()}
	for _, o := range opts {
		o(&b.cfg)
	}
	if b.cfg.Logger == nil {
		b.cfg.Logger = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	b.Dir = b.cfg.DataDir
	b.Start(t)
	t.Cleanup(func() {
		b.Stop(t)
		CheckStore(t, b.Dir)
		if t.Failed() {
			log := b.logs.String()
			if len(log) > maxLogShown {
				log = "...\n" + log[len(log)-maxLogShown:]
			}
			t.Logf("broker log (%s):\n%s", b.Dir, log)
		}
	})
	return b
}

// Start starts the broker again on its data directory after Stop. Its address changes.
func (b *Broker) Start(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	running := b.srv != nil
	b.mu.Unlock()
	if running {
		t.Fatalf("mqtttest: Start: the broker is running")
	}
	srv, err := mqtt.New(b.cfg)
	if err != nil {
		t.Fatalf("mqtttest: start broker on %s: %v", b.cfg.DataDir, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		t.Fatalf("mqtttest: listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	b.mu.Lock()
	b.srv, b.addr, b.serveErr = srv, ln.Addr().String(), done
	b.mu.Unlock()
	b.logs.mark("---- broker started on " + b.addr + " ----")
}

// Addr is the address of the running broker; it changes at each Restart.
func (b *Broker) Addr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.addr
}

// Server is the running broker.
func (b *Broker) Server() *mqtt.Server {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srv
}

// Logs is what the broker has logged so far, across restarts (empty with a Logger option).
func (b *Broker) Logs() string { return b.logs.String() }

// Stop shuts the broker down (5.0 clients get DISCONNECT 0x8B) and waits for Serve to return. It
// does nothing if the broker is already stopped.
func (b *Broker) Stop(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	srv, done := b.srv, b.serveErr
	b.srv, b.serveErr = nil, nil
	b.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("mqtttest: shutdown: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, mqtt.ErrServerClosed) {
			t.Errorf("mqtttest: Serve returned %v, want ErrServerClosed", err)
		}
	case <-time.After(shutdownTimeout):
		t.Errorf("mqtttest: Serve did not return after Shutdown")
	}
	b.logs.mark("---- broker stopped ----")
}

// Restart shuts the broker down and starts a new one on the same data directory, as a broker
// restart would. Every connection is closed. It returns the new address (also Addr()).
func (b *Broker) Restart(t testing.TB) string {
	t.Helper()
	b.Stop(t)
	b.Start(t)
	return b.Addr()
}

// Dial connects a raw-packet client to the running broker; see Dial.
func (b *Broker) Dial(t testing.TB, version byte) *Client {
	t.Helper()
	return Dial(t, b.Addr(), version)
}

// logBuffer collects the broker's log, keeping the last maxLog bytes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const (
	maxLog      = 1 << 20 // kept
	maxLogShown = 64 << 10
)

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len()+len(p) > maxLog {
		rest := append([]byte(nil), l.buf.Bytes()[l.buf.Len()/2:]...)
		l.buf.Reset()
		l.buf.WriteString("...\n")
		l.buf.Write(rest)
	}
	return l.buf.Write(p)
}

func (l *logBuffer) mark(s string) { _, _ = l.Write([]byte(s + "\n")) }

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
