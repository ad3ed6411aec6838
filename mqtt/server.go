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
	"github.com/oncemq/oncemq/session/reason"
)

// ErrServerClosed is returned by Serve and ListenAndServe after Shutdown or Close.
var ErrServerClosed = errors.New("mqtt: server closed")

// Server is a broker: its durable state, its connections, and the listeners that feed it. Every
// listener given to Serve serves the same sessions.
type Server struct {
	opts    Options
	log     *slog.Logger
	journal *inflight.Journal
	broker  *session.Broker

	// ctx ends when the server stops; it bounds what hooks do on a connection's behalf.
	ctx    context.Context
	cancel context.CancelFunc

	readBudget  readBudget    // bytes of the packets being read, over every connection
	droppedQoS0 atomic.Uint64 // QoS 0 PUBLISHes dropped at a full write queue

	connsClosedAtAccept atomic.Uint64 // connections closed at accept past the hard cap

	shuttingDown atomic.Bool
	mu           sync.Mutex // guards listeners and conns
	listeners    map[net.Listener]struct{}
	conns        map[*conn]struct{}
	connWG       sync.WaitGroup // one per connection goroutine
	background   sync.WaitGroup // the drop report
	stopReport   chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// New opens the state file in opts.DataDir, creating it if there is none, and rebuilds every
// session, both packet-identifier tables, the queues and the retained messages from it. It fails
// with a message naming the file if the file is damaged or used by another process. The Server
// serves nothing until Serve or ListenAndServe is called.
func New(opts Options) (*Server, error) {
	opts.setDefaults()
	path := filepath.Join(opts.DataDir, DataFile)
	j, rec, err := inflight.Open(path, &inflight.Options{NoSync: opts.NoSync, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:       opts,
		log:        opts.Logger,
		journal:    j,
		ctx:        ctx,
		cancel:     cancel,
		listeners:  make(map[net.Listener]struct{}),
		conns:      make(map[*conn]struct{}),
		stopReport: make(chan struct{}),
		readBudget: readBudget{limit: opts.ReadBudgetBytes},
	}
	sopts := session.Options{MaxQueued: opts.MaxQueued, MaxQueuedBytes: opts.MaxQueuedBytes, QueueFull: opts.QueueFull,
		MaxSubscriptions: opts.MaxSubscriptions, MaxSessions: opts.MaxSessions, MaxRetained: opts.MaxRetained,
		MaxRetainedBytes: opts.MaxRetainedBytes, Logger: opts.Logger, OnDrop: opts.Events.Drop}
	rep := &reporter{log: s.log, qos0: &s.droppedQoS0}
	sopts.OnRefuse = rep.refused
	if opts.Authorizer != nil {
		sopts.MayRead = opts.Authorizer.CanRead
	}
	s.broker = session.New(j, rec, sopts)
	rep.metrics = &s.broker.Metrics
	s.background.Go(func() { rep.loop(s.stopReport) })
	return s, nil
}

// ListenAndServe listens on Options.Addr over TCP and serves it until Shutdown or Close.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.opts.Addr, err)
	}
	return s.Serve(ln)
}

// Serve accepts MQTT connections on ln until Shutdown or Close, then returns ErrServerClosed. It
// may be called for several listeners at once (TCP, TLS, WebSocket adapters): they all serve the
// same sessions. Temporary accept errors, such as running out of file descriptors, back off instead
// of spinning. A TLS listener (crypto/tls) gives the hooks the client's certificate.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(ln) {
		ln.Close()
		return ErrServerClosed
	}
	defer s.untrack(ln)
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shuttingDown.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				backoff = min(max(backoff*2, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", slog.Any("err", err), slog.Duration("backoff", backoff))
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		}
		backoff = 0
		s.start(newConn(s, nc, ln.Addr()))
	}
}

// start runs c's reader on a goroutine of its own, unless the server is stopping.
func (s *Server) start(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown.Load() {
		c.nc.Close()
		return
	}
	if n := len(s.conns); n >= s.opts.MaxConnections {
		if n >= hardConnectionCap(s.opts.MaxConnections) {
			c.nc.Close() // a flood: not even its CONNECT is read
			s.connsClosedAtAccept.Add(1)
			return
		}
		c.overLimit = true
	}
	s.conns[c] = struct{}{}
	s.connWG.Go(func() {
		defer func() {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
		c.serve()
	})
}

func (s *Server) track(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown.Load() {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server) untrack(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, ln)
}

// Shutdown stops accepting, tells 5.0 clients DISCONNECT 0x8B (Server shutting down), closes
// every connection, waits for them and for the commits under way (or for ctx), and closes the
// store. Sessions stay as they are: a new Server on the same DataDir resumes them.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.stop(ctx, reason.ServerShuttingDown)
}

// Close closes every listener and connection at once, without a DISCONNECT, waits for the
// connections' goroutines and the commits under way, and closes the store. Nothing acknowledged is
// lost: every acknowledgement was sent after its commit.
func (s *Server) Close() error {
	return s.stop(context.Background(), 0)
}

// stop is Shutdown and Close; only the first call does the work, later ones return its result.
func (s *Server) stop(ctx context.Context, disconnect ReasonCode) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.shuttingDown.Store(true)
		for ln := range s.listeners {
			ln.Close()
		}
		for c := range s.conns {
			c.Close(disconnect)
		}
		s.mu.Unlock()
		s.cancel()
		s.stopErr = s.waitConns(ctx)
		close(s.stopReport)
		s.background.Wait()
		s.broker.Close()
		if err := s.journal.Close(); err != nil && s.stopErr == nil {
			s.stopErr = fmt.Errorf("close store: %w", err)
		}
	})
	return s.stopErr
}

// waitConns waits for every connection goroutine to end, or for ctx.
func (s *Server) waitConns(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown: connections still open: %w", ctx.Err())
	}
}
