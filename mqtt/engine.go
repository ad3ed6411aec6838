package mqtt

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session"
)

// ErrStoreUnavailable is returned by Publish, and wrapped in the reason a CONNECT is refused,
// while the store is being reopened after it filled the disk.
var ErrStoreUnavailable = errors.New("mqtt: store unavailable")

// ErrStoreFailed is returned by every Serve (and by Publish) once the store failed in a way that
// cannot be healed in place: an I/O error, a failed sync (errors.Is(err, inflight.ErrIO) holds for
// the cause). The Server then serves nothing; the program should end so that its next start
// recovers the store from the disk (`oncemq serve` exits with status 1).
var ErrStoreFailed = errors.New("mqtt: store failed")

// engine is the durable store and the session layer rebuilt from it: what a failed store takes
// down and a heal builds again. A connection keeps the engine it connected to; a heal closes every
// connection before it closes their engine (docs/ARCHITECTURE.md "Goroutines").
type engine struct {
	journal *inflight.Journal
	broker  *session.Broker
}

// openEngine opens the store with the full start-up recovery and rebuilds the sessions from it.
func (s *Server) openEngine() (*engine, error) {
	path := filepath.Join(s.opts.DataDir, DataFile)
	start := time.Now()
	j, rec, err := inflight.Open(path, &inflight.Options{NoSync: s.opts.NoSync, Logger: s.log, OnFail: s.storeFailed,
		OnCommit: s.opts.OnCommit, MessageCache: s.opts.MessageCache})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.recovery = time.Since(start)
	s.mu.Unlock()
	o := &s.opts
	sopts := session.Options{MaxQueued: o.MaxQueued, MaxQueuedBytes: o.MaxQueuedBytes, QueueFull: o.QueueFull,
		MaxSubscriptions: o.MaxSubscriptions, MaxSessions: o.MaxSessions, MaxRetained: o.MaxRetained,
		MaxRetainedBytes: o.MaxRetainedBytes, Logger: s.log, OnDrop: o.Events.Drop, OnRefuse: s.rep.refused,
		Metrics: &s.metrics, Dedup: s.dedup}
	if s.opts.Authorizer != nil {
		sopts.MayRead = s.opts.Authorizer.CanRead
	}
	return &engine{journal: j, broker: session.New(j, rec, sopts)}, nil
}

// close stops the session timers and closes the store, after the commits under way.
func (e *engine) close() error {
	e.broker.Close()
	if err := e.journal.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// engine returns the engine that serves, or why there is none: the store is being healed, has
// failed for good, or has failed and the heal has not started yet. A CONNECT or a Publish that
// gets an error is refused.
func (s *Server) engine() (*engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.fatal != nil:
		return nil, s.fatal
	case s.eng == nil:
		return nil, fmt.Errorf("%w: %w", ErrStoreUnavailable, s.healing)
	case s.eng.journal.Err() != nil:
		return nil, fmt.Errorf("%w: %w", ErrStoreUnavailable, s.eng.journal.Err())
	}
	return s.eng, nil
}

// storeUnavailable reports whether err says the store cannot take the change, as opposed to a
// refusal of the change itself.
func storeUnavailable(err error) bool {
	return errors.Is(err, inflight.ErrFailed) || errors.Is(err, inflight.ErrClosed) ||
		errors.Is(err, ErrStoreUnavailable) || errors.Is(err, ErrStoreFailed)
}
