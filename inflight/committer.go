package inflight

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"
)

// submitted is one Submit waiting for its commit.
type submitted struct {
	batch      *Batch
	done       func(error)
	checkpoint bool // checkpoint the log before done (WriteTo)
}

// Stats counts the journal's work since Open; Batches/Commits is how well group commit is
// doing.
type Stats struct {
	Commits uint64 // log records appended (each one sync unless NoSync)
	Batches uint64 // batches committed, including empty ones
	Ops     uint64 // changes committed
	// Checkpoints counts the synced bbolt transactions that applied the log to the data file.
	Checkpoints uint64
	// CommitLatency counts commits by duration (log append and fdatasync), in the buckets of
	// LatencyBound: CommitLatency[i] commits took at most LatencyBound(i).
	CommitLatency [LatencyBuckets]uint64
}

// Stats returns the counters so far.
func (j *Journal) Stats() Stats {
	return Stats{Commits: j.commits.Load(), Batches: j.batches.Load(), Ops: j.ops.Load(),
		Checkpoints: j.checkpoints.Load(), CommitLatency: j.latency.snapshot()}
}

// NextSeq returns a new message sequence, larger than any in the file at Open and any returned
// before. Callers call it under their own lock, so that sequences follow their order; it is atomic
// anyway.
func (j *Journal) NextSeq() uint64 {
	return j.seq.Add(1)
}

// Err returns nil, or ErrFailed wrapping the first commit error once the journal has failed.
func (j *Journal) Err() error {
	if p := j.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// Submit hands b to the committer and returns at once: it never waits for the disk, because
// callers hold the locks under which they changed the in-memory state. done, if not nil, is called
// from the committer goroutine once b is committed (nil) or cannot be (the error), after the done of
// every batch submitted before. b may be nil or empty: done then runs once everything submitted
// before is committed.
//
// b must not be changed after Submit.
func (j *Journal) Submit(b *Batch, done func(error)) {
	j.submit(submitted{batch: b, done: done})
}

func (j *Journal) submit(s submitted) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		// Answered by a goroutine of its own, not here: the caller holds locks that done may take.
		j.afterClose = append(j.afterClose, s)
		if !j.draining {
			j.draining = true
			go j.drainClosed()
		}
		return
	}
	j.bodies.submitted(s.batch)
	j.pending = append(j.pending, s)
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// Close stops accepting batches, commits what was submitted before, waits for the committer and
// closes the file. It returns nil only if every batch submitted before it was committed. Later
// calls return the same result. It must not be called from a done callback: it waits for the
// committer, which is running that callback.
func (j *Journal) Close() error {
	j.closeOnce.Do(func() {
		j.mu.Lock()
		j.closed = true
		j.mu.Unlock()
		select {
		case j.wake <- struct{}{}:
		default:
		}
		<-j.stopped
		closeErr := j.closeLog()
		if err := j.db.Close(); err != nil {
			closeErr = errors.Join(closeErr, fmt.Errorf("close %s: %w", j.path, err))
		}
		j.closeErr = errors.Join(j.Err(), closeErr)
	})
	return j.closeErr
}

// run is the committer goroutine: it takes every batch waiting, commits them in one log record
// and answers them in order, and checkpoints the log when it is due, until Close, which
// checkpoints what is left so that a clean stop leaves an empty log.
func (j *Journal) run() {
	defer close(j.stopped)
	for {
		j.mu.Lock()
		for len(j.pending) == 0 && !j.closed {
			j.mu.Unlock()
			j.idle()
			j.mu.Lock()
		}
		round := j.pending
		j.pending = j.spare[:0]
		closed := j.closed
		j.mu.Unlock()

		j.process(round)
		clear(round) // drop the batches and callbacks for the collector
		j.spare = round[:0]
		if closed {
			j.checkpointAll()
			return
		}
		j.maybeCheckpoint()
	}
}

// idle waits for a submission, or for the checkpoint in flight to end, or until the current
// segment of the log is old enough for a checkpoint: a quiet broker does not keep batches in
// memory and records in the log.
func (j *Journal) idle() {
	w := j.wal
	seg := w.segs[w.cur]
	var due <-chan time.Time
	if seg.records > 0 && w.running == nil {
		t := time.NewTimer(w.opts.maxAge - time.Since(seg.first))
		defer t.Stop()
		due = t.C
	}
	select {
	case <-j.wake:
	case <-w.running: // nil, and never ready, when none runs
		w.running = nil
		j.maybeCheckpoint()
	case <-due:
		j.maybeCheckpoint()
	}
}

// process commits one round and calls its done callbacks in submission order.
func (j *Journal) process(round []submitted) {
	if len(round) == 0 {
		return
	}
	if err := j.Err(); err != nil {
		for _, s := range round {
			j.bodies.committed(s.batch, false)
		}
		j.answer(round, err)
		return
	}
	ops := 0
	var invalid map[int]error
	for i, s := range round {
		if s.batch == nil || len(s.batch.ops) == 0 {
			continue
		}
		if err := s.batch.validate(); err != nil {
			if invalid == nil {
				invalid = make(map[int]error)
			}
			invalid[i] = err
			j.log.Error("inflight: batch refused", slog.Any("error", err))
			continue
		}
		ops += len(s.batch.ops)
	}
	var err error
	if ops > 0 {
		start := time.Now()
		err = j.commit(round, invalid)
		if err != nil {
			err = j.fail(err)
		} else {
			j.commits.Add(1)
			took := time.Since(start)
			j.latency.observe(took)
			if j.onCommit != nil {
				j.onCommit(ops, took)
			}
		}
	}
	if err == nil {
		j.batches.Add(uint64(len(round) - len(invalid)))
		j.ops.Add(uint64(ops))
	}
	written := 0
	for i, s := range round {
		written += j.bodies.committed(s.batch, err == nil && invalid[i] == nil)
	}
	if err == nil && j.mapped.add(written) {
		j.releaseMapped()
	}
	var checkpointErr error // for the checkpoint requests only: the round is durable in the log
	if err == nil && slices.ContainsFunc(round, func(s submitted) bool { return s.checkpoint }) {
		checkpointErr = j.checkpointAll()
	}
	for i, s := range round {
		if e, ok := invalid[i]; ok {
			j.call(s.done, e)
		} else if s.checkpoint && err == nil {
			j.call(s.done, checkpointErr)
		} else {
			j.call(s.done, err)
		}
	}
}

// commit appends the valid batches of a round to the log as one record, synced unless NoSync
// (wal.go). A panic while encoding is a failed commit.
func (j *Journal) commit(round []submitted, invalid map[int]error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("commit panicked: %v", r)
		}
	}()
	return j.appendLog(round, invalid)
}

// fail records the first commit error, classified (ErrDiskFull or ErrIO), tells Options.OnFail,
// and returns what every batch gets from now on.
func (j *Journal) fail(cause error) error {
	kind := classify(cause)
	failure := fmt.Errorf("%w: %w: commit to %s: %w", ErrFailed, kind, j.path, cause)
	if j.failure.CompareAndSwap(nil, &failure) {
		j.log.Error("inflight: journal failed: refusing further changes",
			slog.String("path", j.path), slog.String("kind", kind.Error()), slog.Any("error", cause))
		if j.onFail != nil {
			j.onFail(failure)
		}
	}
	return j.Err()
}

// drainClosed answers the batches submitted after Close with ErrClosed, in order, after the
// committer has answered everything submitted before.
func (j *Journal) drainClosed() {
	<-j.stopped
	for {
		j.mu.Lock()
		batch := j.afterClose
		j.afterClose = nil
		if len(batch) == 0 {
			j.draining = false
			j.mu.Unlock()
			return
		}
		j.mu.Unlock()
		j.answer(batch, ErrClosed)
	}
}

func (j *Journal) answer(round []submitted, err error) {
	for _, s := range round {
		j.call(s.done, err)
	}
}

// call runs one done callback. A panic in it is the caller's bug in one connection's work; it is
// logged with its stack, and the committer goes on with the other callbacks and the next commit
// rather than taking every connection's acknowledgements down with it.
func (j *Journal) call(done func(error), err error) {
	if done == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			j.log.Error("inflight: done callback panicked", slog.Any("panic", r),
				slog.String("stack", string(debug.Stack())))
		}
	}()
	done(err)
}
