package inflight

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The write-ahead log in front of bbolt (etcd's design). Each commit appends its round's batches
// to the log as one checksummed record and syncs the log once: that single fdatasync is what makes
// the round durable. bbolt's own commit costs two (data pages, then meta page), so it is paid only
// at a checkpoint, which applies a segment's batches to bbolt in one synced transaction, stores the
// index of the segment's last record in that transaction (meta/log), and then empties the segment.
// Checkpoints run in a goroutine of their own while the committer appends to the other segment.
// Recovery replays the records after that index. See format.go ("Log") for the bytes.

// When a checkpoint is due: whichever comes first. They bound the log's size, the memory of the
// batches kept for the checkpoint, and the replay at start-up.
const (
	checkpointBytes   = 16 << 20
	checkpointRecords = 10000
	checkpointAfter   = time.Second
)

const (
	logVersion   = 1         // first byte of every record's payload
	logHeader    = 8         // payload length u32, CRC-32C u32
	maxLogRecord = 1<<32 - 1 // the length field's limit
	maxLogSkip   = 1_000_000 // a good record after a bad one is looked for this many indexes ahead
)

// keyLogIndex is the meta key of the consistent index: the last log record applied to the file.
var keyLogIndex = []byte("log")

// walOptions are the journal's test hooks, unexported so that the product never sets them.
type walOptions struct {
	openFile     func(path string) (logFile, error) // nil: openLogFile
	onBoltCommit func(db *bolt.DB)                  // after each synced bbolt commit
	maxBytes     int64                              // 0: checkpointBytes
	maxRecords   int                                // 0: checkpointRecords
	maxAge       time.Duration                      // 0: checkpointAfter
}

// writeAhead is the log and what was logged since the last checkpoint. The log is two files,
// segments: the committer appends to one while a checkpoint applies the other to bbolt in a
// goroutine of its own, so that appends do not wait for bbolt. A segment is emptied only after the
// bbolt commit that covers its records.
type writeAhead struct {
	segs   [2]*segment
	cur    int // the segment appended to
	noSync bool
	opts   walOptions

	index uint64 // index of the last record appended (or checkpointed)
	buf   []byte // encoding buffer, reused

	// running is closed when the checkpoint in flight has ended; nil when none is. Only the
	// committer goroutine reads or sets it.
	running chan struct{}

	mu   sync.Mutex
	msgs map[uint64]*Message // messages put by logged batches and not yet in bbolt
}

// segment is one log file and what is logged in it.
type segment struct {
	path    string
	file    logFile
	size    int64     // bytes in the file
	records int       // records in the file
	first   time.Time // when its oldest record was appended
	last    uint64    // index of its last record
	logged  []*Batch  // its batches, in order: what its checkpoint applies
}

// loggedMessage returns a message put by a batch that is in the log and not yet in bbolt. A read
// of a message body consults it before bbolt: until the checkpoint, bbolt does not have it.
func (j *Journal) loggedMessage(seq uint64) (*Message, bool) {
	j.wal.mu.Lock()
	defer j.wal.mu.Unlock()
	m, ok := j.wal.msgs[seq]
	return m, ok
}

// appendLog writes the valid batches of a round as one record and syncs the log (unless NoSync).
// Only then are they durable, and kept for the checkpoint.
func (j *Journal) appendLog(round []submitted, invalid map[int]error) error {
	w := j.wal
	seg := w.segs[w.cur]
	buf := append(w.buf[:0], make([]byte, logHeader)...)
	buf = append(buf, logVersion)
	buf = binary.BigEndian.AppendUint64(buf, w.index+1)
	start := len(seg.logged)
	for i, s := range round {
		if s.batch != nil && len(s.batch.ops) > 0 && invalid[i] == nil {
			seg.logged = append(seg.logged, s.batch)
		}
	}
	batches := seg.logged[start:]
	buf = binary.AppendUvarint(buf, uint64(len(batches)))
	var err error
	for _, b := range batches {
		if buf, err = appendOps(buf, b.ops); err != nil {
			break
		}
	}
	if err == nil && len(buf)-logHeader > maxLogRecord {
		err = fmt.Errorf("a record of %d bytes", len(buf)-logHeader)
	}
	if err == nil {
		err = syncFailpoint()
	}
	if err == nil {
		err = seg.write(buf, w.noSync)
	}
	if cap(buf) <= 1<<20 {
		w.buf = buf
	}
	if err != nil {
		clear(seg.logged[start:])
		seg.logged = seg.logged[:start]
		return fmt.Errorf("append to log %s: %w", seg.path, err)
	}
	w.index++
	seg.last = w.index
	seg.size += int64(len(buf))
	seg.records++
	if seg.records == 1 {
		seg.first = time.Now()
	}
	w.mu.Lock()
	for _, b := range batches {
		for k := range b.ops {
			switch o := &b.ops[k]; o.kind {
			case opPutMessage:
				w.msgs[o.seq] = o.msg
			case opDeleteMessage:
				delete(w.msgs, o.seq)
			}
		}
	}
	w.mu.Unlock()
	return nil
}

// write fills in the header of a record and appends it.
func (s *segment) write(rec []byte, noSync bool) error {
	payload := rec[logHeader:]
	binary.BigEndian.PutUint32(rec, uint32(len(payload)))
	binary.BigEndian.PutUint32(rec[4:], crc32.Checksum(payload, castagnoli))
	if _, err := s.file.Write(rec); err != nil {
		// A part of the record may be in the file: cut it off, so that the file ends with the
		// last whole record. The journal fails either way; recovery would discard it too.
		_ = s.file.Truncate(s.size)
		return err
	}
	if noSync {
		return nil
	}
	return s.file.Sync()
}

// due reports whether the segment has grown enough for a checkpoint; over, whether it has grown
// so far past that the committer waits for the checkpoint in flight rather than append more.
func (s *segment) due(o walOptions) bool {
	return s.records > 0 && (s.size >= o.maxBytes || s.records >= o.maxRecords || time.Since(s.first) >= o.maxAge)
}

func (s *segment) over(o walOptions) bool {
	return s.size >= 2*o.maxBytes || s.records >= 2*o.maxRecords
}

// maybeCheckpoint starts a checkpoint of the current segment in the background when it is due,
// and appends go to the other segment from then on. The other segment must be empty, that is its
// own checkpoint finished: if it has not, the committer goes on appending to the current segment,
// and once that one is over its bound, waits for it (the log's size, and the memory of the
// batches kept for checkpoints, stay bounded).
func (j *Journal) maybeCheckpoint() {
	w := j.wal
	seg := w.segs[w.cur]
	if !seg.due(w.opts) {
		return
	}
	if w.running != nil {
		select {
		case <-w.running:
		default:
			if !seg.over(w.opts) {
				return
			}
			<-w.running
		}
		w.running = nil
	}
	if j.Err() != nil {
		return // the log stays for the next start-up to replay
	}
	w.cur = 1 - w.cur
	done := make(chan struct{})
	w.running = done
	go func() {
		defer close(done)
		if err := j.checkpoint(seg); err != nil {
			j.fail(err)
		}
	}()
}

// checkpointAll applies the whole log to bbolt before it returns, on the committer goroutine: for
// Close and WriteTo.
func (j *Journal) checkpointAll() error {
	w := j.wal
	if w.running != nil {
		<-w.running
		w.running = nil
	}
	if err := j.Err(); err != nil {
		return err
	}
	if err := j.checkpoint(w.segs[w.cur]); err != nil {
		return j.fail(err)
	}
	return nil
}

// checkpoint applies the batches of seg to bbolt in one synced transaction that also stores the
// index of its last record, then empties seg. Puts that a later change of seg overwrites or
// deletes are skipped (superseded.go): the transaction's end state is the same. A crash before the commit replays the segment at
// start-up; a crash after it, before the segment is emptied, finds records the index covers and
// skips them.
func (j *Journal) checkpoint(seg *segment) (err error) {
	if seg.records == 0 {
		return nil
	}
	w := j.wal
	crashPoint(CrashBeforeCheckpoint)
	start := time.Now()
	err = guard(func() error {
		return j.db.Update(func(tx *bolt.Tx) error {
			bk, err := txBuckets(tx)
			if err != nil {
				return err
			}
			skip, i := superseded(seg.logged), 0
			for _, b := range seg.logged {
				for k := range b.ops {
					if !skip[i] {
						if err := bk.apply(&b.ops[k]); err != nil {
							return err
						}
					}
					i++
				}
			}
			return putLogIndex(tx, seg.last)
		})
	})
	if err != nil {
		return fmt.Errorf("checkpoint log %s into %s: %w", seg.path, j.path, err)
	}
	j.checkpoints.Add(1)
	j.log.Debug("inflight: checkpoint", slog.String("log", seg.path), slog.Int("records", seg.records),
		slog.Int("batches", len(seg.logged)), slog.Duration("took", time.Since(start)))
	if w.opts.onBoltCommit != nil {
		w.opts.onBoltCommit(j.db)
	}
	w.mu.Lock()
	for _, b := range seg.logged {
		for k := range b.ops {
			if o := &b.ops[k]; o.kind == opPutMessage && w.msgs[o.seq] == o.msg {
				delete(w.msgs, o.seq) // bbolt has it now
			}
		}
	}
	w.mu.Unlock()
	crashPoint(CrashBeforeLogReset)
	if err := seg.reset(); err != nil {
		return err
	}
	crashPoint(CrashAfterLogReset)
	return nil
}

// reset empties the segment, synced: it follows a bbolt commit that covers every record in it.
func (s *segment) reset() error {
	if err := s.file.Truncate(0); err != nil {
		return fmt.Errorf("empty log %s: %w", s.path, err)
	}
	if err := s.file.Sync(); err != nil {
		return fmt.Errorf("empty log %s: %w", s.path, err)
	}
	clear(s.logged)
	s.logged = s.logged[:0]
	s.size, s.records, s.first = 0, 0, time.Time{}
	return nil
}

func putLogIndex(tx *bolt.Tx, index uint64) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return errors.New("bucket meta missing")
	}
	v := binary.BigEndian.AppendUint64([]byte{formatVersion}, index)
	if err := put(meta, bucketMeta, keyLogIndex, v); err != nil {
		return fmt.Errorf("store log index: %w", err)
	}
	return nil
}

// logIndex reads the consistent index of a file: 0 for a file that never had a checkpoint.
func logIndex(tx *bolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, nil
	}
	v := meta.Get(keyLogIndex)
	if v == nil {
		return 0, nil
	}
	v, err := unseal(bucketMeta, keyLogIndex, v)
	if err != nil {
		return 0, fmt.Errorf("bucket meta, key %q: %w: %w", keyLogIndex, ErrCorrupt, err)
	}
	if err := checkVersion(v); err != nil || len(v) != 9 {
		return 0, fmt.Errorf("bucket meta, key %q: %w: log index malformed", keyLogIndex, ErrCorrupt)
	}
	return binary.BigEndian.Uint64(v[1:]), nil
}

// logRecord is one record read back from the log.
type logRecord struct {
	index   uint64
	offset  int64
	batches [][]op
}

// logRead is what decodeLog found in a log file.
type logRead struct {
	path    string
	records []logRecord // every good record, in order
	size    int64       // bytes in the file, preallocated zeros included
	used    int64       // bytes of its good records
	torn    int64       // offset of a torn tail (an unacknowledged write), or -1
}

// pendingRecords returns the records of both segments after index, in order, checking that they
// follow it and each other without a gap: a log that starts later than the file ends belongs to
// another copy of the file.
func pendingRecords(segs []*logRead, index uint64) ([]logRecord, error) {
	var recs []logRecord
	where := map[uint64]string{}
	for _, l := range segs {
		for _, r := range l.records {
			if r.index > index {
				recs = append(recs, r)
				where[r.index] = fmt.Sprintf("%s at offset %d", l.path, r.offset)
			}
		}
	}
	slices.SortFunc(recs, func(a, b logRecord) int { return cmp.Compare(a.index, b.index) })
	want := index + 1
	for _, r := range recs {
		if r.index != want {
			return nil, fmt.Errorf("log: %w: record %d (%s) where record %d should be, after the data file's last record %d: records are missing (is the log from another copy of the data file?)",
				ErrCorrupt, r.index, where[r.index], want, index)
		}
		want++
	}
	return recs, nil
}

// decodeLog reads a log file's bytes. A bad record at the end is a write the power loss tore:
// it was never acknowledged (acknowledgement follows the sync). A bad record followed by a good
// one is damage, and stops start-up.
func decodeLog(path string, data []byte) (*logRead, error) {
	l := &logRead{path: path, size: int64(len(data)), torn: -1}
	var prev uint64
	for off := 0; off < len(data); {
		if allZero(data[off:]) {
			break // the preallocated end of the segment (osLog)
		}
		rec, err := decodeLogRecord(data[off:])
		if err != nil && !errors.Is(err, errTorn) {
			return nil, fmt.Errorf("log %s: %w: record at offset %d: %w", path, ErrCorrupt, off, err)
		}
		if err != nil {
			if next := goodRecordAfter(data, off+1, prev); next >= 0 {
				return nil, fmt.Errorf("log %s: %w: record at offset %d: %w, and a good record follows at offset %d",
					path, ErrCorrupt, off, err, next)
			}
			l.torn = int64(off)
			break
		}
		if prev != 0 && rec.index != prev+1 {
			return nil, fmt.Errorf("log %s: %w: record at offset %d has index %d after %d", path, ErrCorrupt, off, rec.index, prev)
		}
		rec.offset = int64(off)
		prev = rec.index
		l.records = append(l.records, rec)
		off += logHeader + int(binary.BigEndian.Uint32(data[off:]))
		l.used = int64(off)
	}
	return l, nil
}

// allZero reports whether b holds only zeros. It compares a page at a time with bytes.Equal, and
// stops at the first page that is not zero. bytes.Equal's assembly scanned the 32 MiB of two
// preallocated segments (what every start-up after a clean stop reads) in about 1 ms where a loop
// over the bytes took 35 to 70 ms, and in 30 to 86 ms where it took 0.8 to 1.8 s in a -race
// build, in which every test that reopens a store paid it (three alternating pairs each).
func allZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeroPage))
		if !bytes.Equal(b[:n], zeroPage[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

var zeroPage [4096]byte

// errTorn marks a record that is incomplete or fails its checksum.
var errTorn = errors.New("incomplete or checksum mismatch")

// decodeLogRecord decodes the record at the start of data.
func decodeLogRecord(data []byte) (logRecord, error) {
	if len(data) < logHeader {
		return logRecord{}, fmt.Errorf("%w: %d bytes, shorter than a header", errTorn, len(data))
	}
	n := uint64(binary.BigEndian.Uint32(data))
	if n < 10 || n > uint64(len(data)-logHeader) {
		return logRecord{}, fmt.Errorf("%w: length %d, %d bytes left", errTorn, n, len(data)-logHeader)
	}
	payload := data[logHeader : logHeader+n]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(data[4:]) {
		return logRecord{}, fmt.Errorf("%w: CRC-32C mismatch", errTorn)
	}
	if payload[0] != logVersion {
		return logRecord{}, fmt.Errorf("log record version %d unknown (this build reads %d)", payload[0], logVersion)
	}
	rec := logRecord{index: binary.BigEndian.Uint64(payload[1:])}
	d := &decoder{buf: payload[9:]}
	count := d.uint()
	if d.err != nil || count > uint64(len(d.buf)) {
		return rec, errors.New("log record: batch count malformed")
	}
	for i := range count {
		ops, err := readOps(d)
		if err != nil {
			return rec, fmt.Errorf("log record %d, batch %d: %w", rec.index, i, err)
		}
		rec.batches = append(rec.batches, ops)
	}
	if len(d.buf) != 0 {
		return rec, fmt.Errorf("log record %d: %d trailing bytes", rec.index, len(d.buf))
	}
	return rec, nil
}

// goodRecordAfter looks for a record that decodes, from offset from on, with an index after
// prev: its offset, or -1. Only offsets whose header and index make sense are checksummed.
func goodRecordAfter(data []byte, from int, prev uint64) int {
	for off := from; off+logHeader+9 <= len(data); off++ {
		n := int(binary.BigEndian.Uint32(data[off:]))
		if n < 10 || n > len(data)-off-logHeader || data[off+logHeader] != logVersion {
			continue
		}
		index := binary.BigEndian.Uint64(data[off+logHeader+1:])
		if index <= prev || index > prev+maxLogSkip {
			continue
		}
		if _, err := decodeLogRecord(data[off:]); err == nil {
			return off
		}
	}
	return -1
}

// replayLog applies the pending records to tx and stores the index of the last one: the
// transaction becomes the checkpoint those records never had. Applying a record twice gives the
// same state as applying it once (every change is a put or a delete of its keys), so a record the
// index did not cover, whichever way, is safe to apply.
func replayLog(tx *bolt.Tx, records []logRecord) error {
	if len(records) == 0 {
		return nil
	}
	bk, err := txBuckets(tx)
	if err != nil {
		return err
	}
	for _, r := range records {
		for _, ops := range r.batches {
			for k := range ops {
				if err := bk.apply(&ops[k]); err != nil {
					return fmt.Errorf("replay log record %d: %w", r.index, err)
				}
			}
		}
	}
	return putLogIndex(tx, records[len(records)-1].index)
}

// logSummary logs what a replay found.
func logSummary(log *slog.Logger, segs []*logRead, pending []logRecord) {
	for _, l := range segs {
		if l.torn >= 0 {
			log.Warn("inflight: log ends with a torn record, an unacknowledged write cut by a crash: discarded",
				slog.String("log", l.path), slog.Int64("offset", l.torn), slog.Int64("bytes", l.size-l.torn))
		}
	}
	if len(pending) > 0 {
		batches, changes := 0, 0
		for _, r := range pending {
			batches += len(r.batches)
			for _, ops := range r.batches {
				changes += len(ops)
			}
		}
		log.Info("inflight: log replayed", slog.String("log", segs[0].path), slog.Int("records", len(pending)),
			slog.Int("batches", batches), slog.Int("changes", changes))
	}
}
