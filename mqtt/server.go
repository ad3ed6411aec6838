package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
	metrics session.Metrics // the counts of every engine, across heals
	failed  chan error      // capacity 1: the store failed (inflight.Options.OnFail)

	storeFailures, heals atomic.Uint64

	// ctx ends when the server stops; it bounds what hooks do on a connection's behalf.
	ctx    context.Context
	cancel context.CancelFunc

	readBudget readBudget // bytes of the packets being read, over every connection
	rep        *reporter  // the summary of deliberate drops and refusals

	connsClosedAtAccept atomic.Uint64 // connections closed at accept past the hard cap

	shuttingDown atomic.Bool
	traffic      traffic // counters for Stats, $SYS and the metrics
	started      time.Time
	mu           sync.Mutex // guards the following up to connWG
	listeners    map[net.Listener]struct{}
	conns        map[*conn]struct{}
	eng          *engine              // the store and sessions that serve; nil while healing or after fatal
	healing      error                // the failure being healed; nil when eng serves
	dedup        session.DedupOptions // from Options, for every engine
	fatal        error                // ErrStoreFailed wrapping the failure that ended the service
	retired      inflight.Stats       // the counters of the journals closed by heals
	connWG       sync.WaitGroup       // one per connection goroutine
	background   sync.WaitGroup       // the drop report, the store watcher, the $SYS publisher
	stopReport   chan struct{}

	recovery time.Duration // how long the last opening of the state file took; guarded by mu

	stopOnce sync.Once
	stopErr  error
}

// New opens the state file in opts.DataDir, creating it if there is none, and rebuilds every
// session, both packet-identifier tables, the queues and the retained messages from it. It fails
// with a message naming the file if the file is damaged or used by another process. The Server
// serves nothing until Serve or ListenAndServe is called.
func New(opts Options) (*Server, error) {
	opts.setDefaults()
	dedup, err := opts.dedup()
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:       opts,
		dedup:      dedup,
		log:        opts.Logger,
		failed:     make(chan error, 1),
		listeners:  make(map[net.Listener]struct{}),
		conns:      make(map[*conn]struct{}),
		stopReport: make(chan struct{}),
		started:    time.Now(),
		readBudget: readBudget{limit: opts.ReadBudgetBytes},
	}
	s.rep = &reporter{log: s.log, metrics: &s.metrics, qos0: &s.traffic.qos0Overflow}
	eng, err := s.openEngine()
	if err != nil {
		return nil, err
	}
	s.eng = eng
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.background.Go(s.watchStore)
	if opts.SysInterval > 0 {
		s.background.Go(func() { s.sysLoop(opts.SysInterval, s.stopReport) })
	}
	s.background.Go(func() { s.rep.loop(s.stopReport) })
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
//
// A store that fills the disk is healed while Serve goes on (see Readiness). A store that fails
// otherwise (an I/O error) ends the service: Serve returns an error wrapping ErrStoreFailed, and
// the program should Close the Server and end, so that its next start recovers from the disk.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.track(ln); err != nil {
		ln.Close()
		return err
	}
	defer s.untrack(ln)
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if err := s.stopped(); err != nil {
				return err
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
		s.traffic.accepted.Add(1)
		s.start(newConn(s, nc, ln.Addr()))
	}
}

// start runs c's reader on a goroutine of its own, unless the server is stopping.
func (s *Server) start(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown.Load() || s.fatal != nil {
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

func (s *Server) track(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal != nil {
		return s.fatal
	}
	if s.shuttingDown.Load() {
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	return nil
}

// stopped is what Serve returns once its listener is closed by the server: the store's fatal
// failure, or ErrServerClosed; nil if the server did not close it.
func (s *Server) stopped() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal != nil {
		return s.fatal
	}
	if s.shuttingDown.Load() {
		return ErrServerClosed
	}
	return nil
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
		s.background.Wait() // a heal under way gives up, and leaves s.eng nil or in service
		s.mu.Lock()
		eng := s.eng
		s.eng = nil
		s.mu.Unlock()
		if eng != nil {
			if err := eng.close(); err != nil && s.stopErr == nil {
				s.stopErr = err
			}
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
