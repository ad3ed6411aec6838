package inflight

// The disk of a power-loss test, shared by the journal-level test (powerloss_test.go) and the
// MQTT-level one (powerloss_mqtt_test.go, through export_test.go). The log is written through
// recordingLog, which keeps, beside the bytes written, the bytes a sync covered; the bbolt file is
// copied after each of its commits, all synced (bbolt is changed only by synced commits, so the
// file of a power loss is the copy of its last completed commit). A power loss is then rebuilt by
// writeFiles: the log is what the last sync covered, plus none, all or a torn part of what was
// written after it; the bbolt file is the copy of its last commit.
//
// The recorder keeps the state after every event (history, for the journal-level test, which
// picks its power losses after the run), or loses power live (arm): at the Nth sync or at the Nth
// byte written, the disk state is frozen, and every later write, sync or truncation waits until
// release, then fails with EIO. No commit completes after the loss, so nothing acknowledged after
// it can leave; the committer does not stay blocked once the test tears the broker down.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// diskState is the durable picture at one moment of the run.
type diskState struct {
	logs     [2]fileState // the log's segments
	snapshot int          // index of the last bbolt copy
	acks     int          // batches acknowledged so far
	what     string       // the event that ended here
}

// fileState is one log file as a power loss can leave it.
type fileState struct {
	synced   []byte // as of its last sync
	unsynced []byte // appended since, which a power loss may keep all, part or none of
}

// recorder is the disk of one run.
type recorder struct {
	mu        sync.Mutex
	files     [2]recordedFile
	snapshots [][]byte // bbolt file after each commit
	acks      int
	history   bool        // keep states
	states    []diskState // the state after each event, when history

	// The live power loss (arm). Counts are from the arm on.
	armed          bool
	loseAtSync     int   // lose power when the log's Nth sync starts (0: never)
	loseAtByte     int64 // lose power once N bytes are written, tearing that write (0: never)
	syncs          int
	bytes          int64
	lostState      *diskState    // the state at the loss; nil while power is on
	lost, released chan struct{} // closed at the loss, and when the test lets waiters fail
}

type recordedFile struct {
	content []byte // as written
	synced  []byte
	cut     bool // truncated since the last sync: only synced can survive
}

func newRecorder(history bool) *recorder {
	return &recorder{history: history, lost: make(chan struct{}), released: make(chan struct{})}
}

// errPowerLost is what the disk answers after the loss, once released: EIO, a failed sync.
var errPowerLost = fmt.Errorf("simulated power loss: %w", syscall.EIO)

// stateLocked is the durable picture now.
func (r *recorder) stateLocked(what string) diskState {
	st := diskState{snapshot: len(r.snapshots) - 1, acks: r.acks, what: what}
	for i, f := range r.files {
		st.logs[i].synced = bytes.Clone(f.synced)
		if !f.cut && len(f.content) > len(f.synced) && bytes.HasPrefix(f.content, f.synced) {
			st.logs[i].unsynced = bytes.Clone(f.content[len(f.synced):])
		}
	}
	return st
}

func (r *recorder) note(what string) {
	if r.history {
		r.states = append(r.states, r.stateLocked(what))
	}
}

// arm starts counting syncs and bytes from now, and loses power at the atSync-th sync or once
// atByte bytes are written (0: not on that count).
func (r *recorder) arm(atSync int, atByte int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed, r.loseAtSync, r.loseAtByte, r.syncs, r.bytes = true, atSync, atByte, 0, 0
}

// counts returns the syncs and bytes since arm.
func (r *recorder) counts() (syncs int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncs, r.bytes
}

// loseNow loses power, unless it is lost already.
func (r *recorder) loseNow(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loseLocked(what)
}

func (r *recorder) loseLocked(what string) {
	if r.lostState != nil {
		return
	}
	st := r.stateLocked(what)
	r.lostState = &st
	close(r.lost)
}

// release lets every write, sync and truncation after the loss fail, so that the journal fails
// and its broker can be closed. Call it once, after loseNow or the loss.
func (r *recorder) release() { close(r.released) }

// waitUnlocked unlocks r.mu and waits until release: the disk answers nothing after the loss.
func (r *recorder) waitUnlocked() error {
	r.mu.Unlock()
	<-r.released
	return errPowerLost
}

// lossState returns the state at the loss and the bbolt copy it goes with.
func (r *recorder) lossState() (diskState, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.lostState, r.snapshots[r.lostState.snapshot]
}

func (r *recorder) ack() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks++
	r.note("ack")
}

// snapshot copies the bbolt file after a commit (walOptions.onBoltCommit). A commit that ends
// after the loss is not on the disk of the loss.
func (r *recorder) snapshot(db *bolt.DB) {
	var buf bytes.Buffer
	if err := db.View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(&buf); return err }); err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lostState != nil {
		return
	}
	r.snapshots = append(r.snapshots, buf.Bytes())
	r.note("bbolt commit")
}

// open returns the recording file of a segment (walOptions.openFile).
func (r *recorder) open(path string) (logFile, error) {
	for i, p := range segmentPaths(filepath.Join(filepath.Dir(path), "oncemq.db")) {
		if p == path {
			return recordingLog{r, i}, nil
		}
	}
	return nil, fmt.Errorf("no segment %s", path)
}

// recordingLog is one log file of a run.
type recordingLog struct {
	r *recorder
	i int
}

func (l recordingLog) Write(p []byte) (int, error) {
	r := l.r
	r.mu.Lock()
	if r.lostState != nil {
		return 0, r.waitUnlocked()
	}
	f := &r.files[l.i]
	if r.armed && r.loseAtByte > 0 && r.bytes+int64(len(p)) >= r.loseAtByte {
		n := r.loseAtByte - r.bytes // the write is torn there
		f.content = append(f.content, p[:n]...)
		r.bytes += n
		r.loseLocked(fmt.Sprintf("write torn at byte %d", r.loseAtByte))
		return int(n), r.waitUnlocked()
	}
	f.content = append(f.content, p...)
	r.bytes += int64(len(p))
	r.note("write")
	r.mu.Unlock()
	return len(p), nil
}

func (l recordingLog) Sync() error {
	r := l.r
	r.mu.Lock()
	if r.lostState != nil {
		return r.waitUnlocked()
	}
	r.syncs++
	if r.armed && r.syncs == r.loseAtSync {
		// The sync never completes: what it would have covered stays unsynced.
		r.loseLocked(fmt.Sprintf("sync %d", r.syncs))
		return r.waitUnlocked()
	}
	f := &r.files[l.i]
	f.synced = bytes.Clone(f.content)
	f.cut = false
	r.note("sync")
	r.mu.Unlock()
	return nil
}

func (l recordingLog) Truncate(size int64) error {
	r := l.r
	r.mu.Lock()
	if r.lostState != nil {
		return r.waitUnlocked()
	}
	f := &r.files[l.i]
	f.content = f.content[:size:size]
	f.cut = true
	r.note("truncate")
	r.mu.Unlock()
	return nil
}

func (l recordingLog) Close() error { return nil }

// writeFiles writes the files of a power loss at st beside the data file db: the bbolt copy
// snapshot as db, and each log segment as what its last sync covered plus the first keep bytes
// of what was written after it (0: none; more than there is: all). It returns the unsynced bytes
// there were, over both segments.
func (st diskState) writeFiles(db string, snapshot []byte, keep int) (unsynced int, err error) {
	if err := os.WriteFile(db, snapshot, 0o600); err != nil {
		return 0, err
	}
	for i, p := range segmentPaths(db) {
		f := st.logs[i]
		k := min(keep, len(f.unsynced))
		unsynced += len(f.unsynced)
		if err := os.WriteFile(p, append(bytes.Clone(f.synced), f.unsynced[:k]...), 0o600); err != nil {
			return 0, err
		}
	}
	return unsynced, nil
}
