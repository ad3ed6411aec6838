package mqtt

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// The backoff between two attempts to reopen a store that filled the disk.
const (
	healMinBackoff = 100 * time.Millisecond
	healMaxBackoff = 5 * time.Second
)

// probeFile is written next to the store, synced and removed before a heal reopens the store.
const probeFile = DataFile + ".probe"

// storeFailed is the journal's OnFail: it hands the failure to watchStore. It runs on the
// committer goroutine, so it only signals. A journal fails once, and watchStore takes each failure
// before it opens the next journal, so the channel never holds two.
func (s *Server) storeFailed(err error) {
	select {
	case s.failed <- err:
	default:
	}
}

// watchStore acts on each failure of the store until the server stops: a full disk is healed in
// place; any other failure ends the Server's service (ErrStoreFailed), as only a new process,
// recovering from the disk, can trust the file again.
func (s *Server) watchStore() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case err := <-s.failed:
			s.storeFailures.Add(1)
			if !errors.Is(err, inflight.ErrDiskFull) {
				s.failFatal(err)
				return
			}
			if !s.heal(err) {
				return
			}
		}
	}
}

// heal takes down the engine whose store filled the disk and builds a new one from the file, once
// writes succeed again: every client is disconnected (the sessions' memory ran ahead of the file,
// which is the truth), the store and the session layer are closed, and the store is reopened with
// the full start-up recovery, retrying with backoff. The listeners stay open meanwhile; CONNECTs
// are refused with Server unavailable. It returns false if the server stopped first.
func (s *Server) heal(cause error) bool {
	s.log.Error("store failed: disk full; disconnecting every client and refusing CONNECTs until the store is reopened",
		slog.Any("err", cause))
	old := s.detach(cause, reason.ServerBusy)
	if old == nil {
		return false
	}
	s.retire(old)
	backoff := healMinBackoff
	for attempt := 1; ; attempt++ {
		select {
		case <-s.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		eng, err := s.reopen()
		if err == nil {
			return s.attach(eng, attempt)
		}
		if errors.Is(err, inflight.ErrCorrupt) {
			s.failFatal(err) // as at start-up: never serve from a file that cannot be read
			return false
		}
		s.log.Warn("store not reopened yet; retrying", slog.Int("attempt", attempt),
			slog.Duration("backoff", backoff), slog.Any("err", err))
		backoff = min(backoff*2, healMaxBackoff)
	}
}

// detach takes the engine out of service and closes every connection with code (5.0: DISCONNECT).
// It returns nil if the server is stopping: its shutdown closes the engine.
func (s *Server) detach(cause error, code reason.Code) *engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown.Load() {
		return nil
	}
	old := s.eng
	s.eng, s.healing = nil, cause
	for c := range s.conns {
		c.Close(code)
	}
	return old
}

// retire closes an engine taken out of service and keeps its journal's counters for Stats.
func (s *Server) retire(old *engine) {
	if old == nil {
		return
	}
	js := old.journal.Stats()
	if err := old.close(); err != nil {
		s.log.Debug("closed the failed store", slog.Any("err", err))
	}
	s.mu.Lock()
	s.retired.Commits += js.Commits
	s.retired.Batches += js.Batches
	s.retired.Ops += js.Ops
	for i := range js.CommitLatency {
		s.retired.CommitLatency[i] += js.CommitLatency[i]
	}
	s.mu.Unlock()
}

// reopen waits for room on the disk, then opens the store and rebuilds the sessions from it.
func (s *Server) reopen() (*engine, error) {
	if err := probeSpace(s.opts.DataDir, s.opts.MaxPacketSize); err != nil {
		return nil, err
	}
	return s.openEngine()
}

// attach puts a reopened engine in service, unless the server stopped meanwhile.
func (s *Server) attach(eng *engine, attempts int) bool {
	s.mu.Lock()
	if s.shuttingDown.Load() {
		s.mu.Unlock()
		_ = eng.close()
		return false
	}
	s.eng, s.healing = eng, nil
	s.mu.Unlock()
	s.heals.Add(1)
	s.log.Info("store healed: reopened from the file; serving again", slog.Int("attempts", attempts))
	return true
}

// failFatal ends the service after a failure that cannot be healed in place: the listeners and
// every connection are closed (5.0: DISCONNECT Server shutting down), every Serve returns
// ErrStoreFailed wrapping cause, and the store is closed so that another process may open it.
func (s *Server) failFatal(cause error) {
	s.log.Error("store failed: I/O error; nothing written since the last good sync can be trusted: "+
		"stopping so that a restart recovers from the disk", slog.Any("err", cause))
	s.mu.Lock()
	if s.shuttingDown.Load() {
		s.mu.Unlock()
		return
	}
	s.fatal = fmt.Errorf("%w: %w", ErrStoreFailed, cause)
	old := s.eng
	s.eng = nil
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.Close(reason.ServerShuttingDown)
	}
	s.mu.Unlock()
	s.retire(old)
}

// probeSpace writes size bytes to a file next to the store, syncs and removes it: the store is
// reopened only once there is room for at least the largest message a client may send, so that a
// heal on a disk that is still full does not disconnect everyone again at the next commit.
func probeSpace(dir string, size int) error {
	path := filepath.Join(dir, probeFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("probe for space: %w", err)
	}
	defer os.Remove(path)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for left := size; left > 0; left -= len(chunk) {
		if _, err := f.Write(chunk[:min(left, len(chunk))]); err != nil {
			return fmt.Errorf("probe for space: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("probe for space: %w", err)
	}
	return nil
}
