package inflight

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// segmentPaths are the two files of the log of the data file at path: oncemq.wal, oncemq.wal.1.
func segmentPaths(path string) [2]string {
	p := logPath(path)
	return [2]string{p, p + ".1"}
}

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
	w := &writeAhead{noSync: noSync, opts: opts, msgs: make(map[uint64]*Message)}
	for i, p := range segmentPaths(path) {
		w.segs[i] = &segment{path: p}
	}
	return w
}

// recoverWithLog is the recovery of Open with the log: the records after the file's log index are
// replayed into the file in the recovery transaction (synced), then the log is emptied and opened
// for appending. pre, read from the file alone, is read again when there is something to replay.
func (j *Journal) recoverWithLog(pre *recovery, now int64) (*Recovered, uint64, error) {
	w := j.wal
	index, segs, pending, err := readLogFor(j.db, j.path)
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
	logSummary(j.log, segs, pending)
	if len(pending) > 0 {
		index = pending[len(pending)-1].index
	}
	w.index = index
	for _, s := range w.segs {
		if s.file, err = w.opts.openFile(s.path); err == nil {
			err = s.reset() // replayed, or covered by the index: empty it, preallocated
		}
		if err != nil {
			j.closeLog()
			return nil, 0, fmt.Errorf("open %s: %w", j.path, err)
		}
	}
	return rec, lastSeq, nil
}

// closeLog closes the segments' files.
func (j *Journal) closeLog() error {
	var errs []error
	for _, s := range j.wal.segs {
		if s.file != nil {
			if err := s.file.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close log %s: %w", s.path, err))
			}
		}
	}
	return errors.Join(errs...)
}

// readLogFor reads the log index of db and the log of the data file at path: the index, what each
// segment holds, and the records after the index.
func readLogFor(db *bolt.DB, path string) (uint64, []*logRead, []logRecord, error) {
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
	var segs []*logRead
	for _, p := range segmentPaths(path) {
		data, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, nil, nil, fmt.Errorf("open %s: read the log: %w", path, err)
		}
		l, err := decodeLog(p, data)
		if err != nil {
			return 0, nil, nil, err
		}
		segs = append(segs, l)
	}
	pending, err := pendingRecords(segs, index)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	return index, segs, pending, nil
}

// logSize is the bytes of records in the log's segments.
func logSize(segs []*logRead) int64 {
	var n int64
	for _, l := range segs {
		n += l.used
	}
	return n
}

// checkpointLog replays the log of the data file at path into db and empties the log, for the
// offline commands that rewrite the file (compact): they work on the file alone.
func checkpointLog(db *bolt.DB, path string, log *slog.Logger) error {
	_, segs, pending, err := readLogFor(db, path)
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
	logSummary(log, segs, pending)
	return emptyLog(segs)
}

// emptyLog empties the log's segments once the data file holds every record of them.
func emptyLog(segs []*logRead) error {
	for _, l := range segs {
		if l.size == 0 {
			continue
		}
		f, err := openLogFile(l.path)
		if err != nil {
			return err
		}
		s := &segment{path: l.path, file: f}
		if err := s.reset(); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// checkpointForCopy has the committer apply the whole log to the file before a copy is read
// (WriteTo), so that the copy, a bbolt file alone, holds every batch acknowledged before.
func (j *Journal) checkpointForCopy() error {
	done := make(chan error, 1)
	j.submit(submitted{checkpoint: true, done: func(err error) { done <- err }})
	return <-done
}

// logHasRecords reports whether a segment of the log of the data file at path starts with
// something other than the zeros of an empty one: then start-up may have records to replay. It
// reads the first header of each segment, not the log: a segment that cannot be read counts as
// holding records, so that the full read after the write open (readLogFor) reports why. It
// decides only how the file is read before that open, never what is replayed.
func logHasRecords(path string) bool {
	for _, p := range segmentPaths(path) {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return true
		}
		var head [logHeader]byte
		n, err := io.ReadFull(f, head[:])
		_ = f.Close()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return true
		}
		if !allZero(head[:n]) {
			return true
		}
	}
	return false
}

// replayInKeyOrder applies the log records after the file's index to tx, as replayLog does, but
// in the order of the records they write rather than the order they were logged. bbolt splits a
// page only when the transaction commits, so the changes of a whole log land in a few nodes that
// grow as they go, and each insertion in the middle of one moves everything after it: the log of
// a broker killed while four sessions' queues filled at once cost 0.3 s of copying at start-up.
// In key order every insertion appends.
//
// The result is the state of applying them in order. Every change but DeleteSession puts or
// deletes its own records (appendTarget), so changes of different records commute, and the sort
// keeps the order of the changes of one record, of which only the last decides it (the rule of a
// checkpoint, superseded.go), and is applied. DeleteSession deletes a range: it is applied in its
// place, after every change before it and before every change after it. Replaying twice still
// gives the state of replaying once.
func replayInKeyOrder(tx *bolt.Tx, records []logRecord) error {
	if len(records) == 0 {
		return nil
	}
	bk, err := txBuckets(tx)
	if err != nil {
		return err
	}
	type change struct {
		o          *op
		record     uint64 // the log record's index, for errors
		n          int    // its place in the log, which breaks ties: the order of one record's changes
		start, end int    // its target in targets
	}
	var (
		run     []change // the changes since the last DeleteSession
		targets []byte
	)
	target := func(c change) []byte { return targets[c.start:c.end] }
	flush := func() error {
		slices.SortFunc(run, func(a, b change) int {
			return cmp.Or(bytes.Compare(target(a), target(b)), cmp.Compare(a.n, b.n))
		})
		for i, c := range run {
			if i+1 < len(run) && bytes.Equal(target(c), target(run[i+1])) {
				continue // a later change of the same record decides it
			}
			if err := bk.apply(c.o); err != nil {
				return fmt.Errorf("replay log record %d: %w", c.record, err)
			}
		}
		run, targets = run[:0], targets[:0]
		return nil
	}
	n := 0
	for _, r := range records {
		for _, ops := range r.batches {
			for k := range ops {
				o := &ops[k]
				start := len(targets)
				var ok bool
				if targets, ok = o.appendTarget(targets); ok {
					run = append(run, change{o: o, record: r.index, n: n, start: start, end: len(targets)})
					n++
					continue
				}
				targets = targets[:start]
				if err := flush(); err != nil {
					return err
				}
				if err := bk.apply(o); err != nil {
					return fmt.Errorf("replay log record %d: %w", r.index, err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return putLogIndex(tx, records[len(records)-1].index)
}
