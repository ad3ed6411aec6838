package inflight

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	bolt "go.etcd.io/bbolt"
)

func newWriteAhead(path string, noSync bool, opts walOptions) *writeAhead {
	if opts.openFile == nil {
		opts.openFile = openLogFile
	}
	if opts.maxBytes == 0 {
		opts.maxBytes = checkpointBytes
	}
	if opts.maxRecords == 0 {
		opts.maxRecords = checkpointRecords
	}
	if opts.maxAge == 0 {
		opts.maxAge = checkpointAfter
	}
	return &writeAhead{path: path, noSync: noSync, opts: opts, msgs: make(map[uint64]*Message)}
}

// recoverWithLog is the recovery of Open with the log: the records after the file's log index are
// replayed into the file in the recovery transaction (synced), then the log is emptied and opened
// for appending. pre, read from the file alone, is read again when there is something to replay.
func (j *Journal) recoverWithLog(pre *recovery, now int64) (*Recovered, uint64, error) {
	w := j.wal
	index, l, pending, err := readLogFor(j.db, j.path, w.path)
	if err != nil {
		return nil, 0, err
	}
	if len(pending) > 0 {
		pre = nil
	}
	rec, lastSeq, err := j.recoverState(pre, now, pending)
	if err != nil {
		return nil, 0, err
	}
	if w.opts.onBoltCommit != nil {
		w.opts.onBoltCommit(j.db)
	}
	logSummary(j.log, w.path, l, pending)
	if len(pending) > 0 {
		index = pending[len(pending)-1].index
	}
	if w.file, err = w.opts.openFile(w.path); err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", j.path, err)
	}
	w.index = index
	if l.size > 0 {
		if err := w.reset(); err != nil {
			_ = w.file.Close()
			return nil, 0, fmt.Errorf("open %s: %w", j.path, err)
		}
	}
	return rec, lastSeq, nil
}

// readLogFor reads the log index of db and the log at logFile: the index, what the log holds, and
// the records after the index.
func readLogFor(db *bolt.DB, path, logFile string) (uint64, *logRead, []logRecord, error) {
	var index uint64
	err := guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			var err error
			index, err = logIndex(tx)
			return err
		})
	})
	if err != nil {
		return 0, nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	data, err := os.ReadFile(logFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil, fmt.Errorf("open %s: read the log: %w", path, err)
	}
	l, err := decodeLog(logFile, data)
	if err != nil {
		return 0, nil, nil, err
	}
	pending, err := l.pending(logFile, index)
	if err != nil {
		return 0, nil, nil, err
	}
	return index, l, pending, nil
}

// checkpointLog replays the log at logPath(path) into db and empties the log, for the offline
// commands that rewrite the file (compact): they work on the file alone.
func checkpointLog(db *bolt.DB, path string, log *slog.Logger) error {
	lp := logPath(path)
	_, l, pending, err := readLogFor(db, path, lp)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		err := guard(func() error {
			return db.Update(func(tx *bolt.Tx) error { return replayLog(tx, pending) })
		})
		if err != nil {
			return fmt.Errorf("%s: replay the log: %w", path, err)
		}
	}
	logSummary(log, lp, l, pending)
	if l.size == 0 {
		return nil
	}
	f, err := openLogFile(lp)
	if err != nil {
		return err
	}
	w := &writeAhead{path: lp, file: f}
	if err := w.reset(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// WriteTo's checkpoint: the committer applies the log to the file before the copy is read, so
// that the copy, a bbolt file alone, holds every batch acknowledged before.
func (j *Journal) checkpointForCopy() error {
	done := make(chan error, 1)
	j.submit(submitted{checkpoint: true, done: func(err error) { done <- err }})
	return <-done
}
