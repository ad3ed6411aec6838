package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session"
)

// Config is what the broker needs to run. The zero value of each field means its default.
type Config struct {
	Listen         string        // TCP address; default "127.0.0.1:1883"
	DataDir        string        // folder of oncemq.db; default "./data"
	NoSync         bool          // --sync none: do not fsync commits
	MaxQueued      int           // per-session queue bound (offline or over Receive Maximum); default 10000
	ReceiveMaximum int           // QoS 1/2 PUBLISHes a client may have unacknowledged; default 1024
	MaxPacketSize  int           // largest packet accepted, in bytes; default 1 MiB
	ConnectTimeout time.Duration // time allowed between accept and CONNECT; default 10s
	Logger         *slog.Logger  // default slog.Default()
}

func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:1883"
	}
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.ReceiveMaximum <= 0 || c.ReceiveMaximum > 65535 {
		c.ReceiveMaximum = 1024
	}
	if c.MaxPacketSize <= 0 {
		c.MaxPacketSize = 1 << 20
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// DBFile is the name of the state file inside the data directory.
const DBFile = "oncemq.db"

// Server is a running broker: a listener, its connections, and the session state.
type Server struct {
	cfg     Config
	log     *slog.Logger
	journal *inflight.Journal
	broker  *session.Broker
	ln      net.Listener

	shuttingDown atomic.Bool
	mu           sync.Mutex // guards conns
	conns        map[*conn]struct{}
	wg           sync.WaitGroup // one per connection goroutine
	serveDone    chan struct{}
}

// New opens the data directory, recovers the durable state, and binds the listener. It fails with a
// message naming the file if the store is corrupt or used by another process.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	path := filepath.Join(cfg.DataDir, DBFile)
	j, rec, err := inflight.Open(path, &inflight.Options{NoSync: cfg.NoSync, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		j.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		journal:   j,
		broker:    session.New(j, rec, session.Options{MaxQueued: cfg.MaxQueued, Logger: cfg.Logger}),
		ln:        ln,
		conns:     make(map[*conn]struct{}),
		serveDone: make(chan struct{}),
	}
	return s, nil
}

// Addr is the address the listener is bound to (useful with port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Broker gives access to the session layer, for metrics and tests.
func (s *Server) Broker() *session.Broker { return s.broker }

// Serve accepts connections until Shutdown; it returns nil after a clean shutdown. Temporary accept
// errors (out of file descriptors) back off instead of spinning.
func (s *Server) Serve() error {
	defer close(s.serveDone)
	// Background work for as long as the broker serves; Serve waits for it before returning.
	var background sync.WaitGroup
	stop := make(chan struct{})
	defer background.Wait()
	defer close(stop)
	background.Go(func() { reportLoop(s.log, &s.broker.Metrics, stop) })
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.shuttingDown.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				backoff = min(max(backoff*2, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", slog.Any("err", err), slog.Duration("backoff", backoff))
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		backoff = 0
		c := newConn(s, nc)
		s.mu.Lock()
		if s.shuttingDown.Load() {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
			}()
			c.serve()
		}()
	}
}

// Shutdown stops accepting, tells 5.0 clients DISCONNECT 0x8B, closes every connection, waits for
// the commits under way and closes the store. Sessions stay as they are: a restart resumes them.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.shuttingDown.Swap(true) {
		return nil
	}
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close(0x8B) // server shutting down
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("shutdown: connections still open: %w", ctx.Err())
	}
	s.broker.Close()
	if cerr := s.journal.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("shutdown: close store: %w", cerr)
	}
	return err
}
