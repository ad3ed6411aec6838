package inflight

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// lockTimeout bounds the wait for the file lock, so that a second broker on the same file fails
// with a clear message instead of hanging.
const lockTimeout = time.Second

// ErrInUse is wrapped by Open and Inspect when another process holds the file: a running broker.
var ErrInUse = errors.New("data file is in use by another process")

// Open opens the journal file at path, creating it and its directory if missing, and reads the
// durable state back. A file of format 1 is migrated first (migrate). Sessions whose expiry passed while the broker was down are removed first, and
// sessions that were connected when it stopped are marked disconnected now, so that their expiry
// counts from the restart.
//
// Open fails, never returning an empty state, when the file is locked by another process, is not a
// journal this build can read (empty, truncated, not bbolt, bbolt without oncemq's meta/format), or
// holds damaged records (a DamageError lists them): starting empty, or without them, would drop
// messages already acknowledged. A new file is created only where none exists.
func Open(path string, opts *Options) (*Journal, *Recovered, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = func() int64 { return time.Now().UnixNano() }
	}
	if testWAL != nil {
		if w, ok := testWAL(path); ok {
			o.wal = w
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, nil, fmt.Errorf("open %s: create directory: %w", path, err)
	}
	now := o.Now()
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := createStore(path); err != nil {
			return nil, nil, err
		}
	case err != nil:
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	case st.Size() == 0:
		return nil, nil, fmt.Errorf("open %s: %w: the file is empty (0 bytes), not an oncemq data file; "+
			"a new store is created only where no file exists: move it away to start empty", path, ErrCorrupt)
	}
	if err := migrate(path, now, o.Logger); err != nil {
		return nil, nil, err
	}
	pre, err := inspect(path, now, o.Logger)
	if err != nil {
		return nil, nil, err
	}
	db, err := openBolt(path, false, false) // bbolt is only ever written by synced commits
	if err != nil {
		return nil, nil, err
	}
	j := &Journal{
		path:     path,
		db:       db,
		log:      o.Logger,
		onFail:   o.OnFail,
		onCommit: o.OnCommit,
		bodies:   bodies{unwritten: make(map[uint64]unwritten), cache: newBodyCache(cmp.Or(o.MessageCache, DefaultMessageCache))},
		wake:     make(chan struct{}, 1),
		stopped:  make(chan struct{}),
		wal:      newWriteAhead(logPath(path), o.NoSync, o.wal),
	}
	// bbolt's page walk, which rebuilds the free list, left every page of the file mapped:
	// handed back before recovery's heap grows on top of them.
	j.releaseMapped()
	rec, lastSeq, err := j.recoverWithLog(pre, now)
	if err != nil {
		closeQuietly(db)
		return nil, nil, err
	}
	j.seq.Store(lastSeq)
	j.releaseMapped() // the pages recovery and bbolt's open walked
	go j.run()
	return j, rec, nil
}

// openBolt opens the bbolt file. bbolt can panic on a damaged file (opened for writing, it walks
// the pages to rebuild the free list, since the free list is not synced); a panic in the calling
// goroutine is turned into an error, and the file bbolt opened is closed so that its lock is
// released. A read-only handle takes a shared lock, which also fails while another process has the
// file open for writing.
func openBolt(path string, readOnly, noSync bool) (db *bolt.DB, err error) {
	return openBoltWith(path, readOnly, noSync, false)
}

// openBoltWith is openBolt that may also rebuild the free list of a read-only handle (bbolt
// skips it there), which Inspect needs to count free pages.
func openBoltWith(path string, readOnly, noSync, freelist bool) (db *bolt.DB, err error) {
	var file *os.File
	bo := &bolt.Options{
		PreLoadFreelist: freelist,
		ReadOnly:        readOnly,
		Timeout:         lockTimeout,
		NoSync:          noSync,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			file = f
			return f, err
		},
	}
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				_ = file.Close()
			}
			db = nil
			err = fmt.Errorf("open %s: %w: bbolt panicked reading it: %v", path, ErrCorrupt, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, bo)
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open %s: %w (is another oncemq running?): %w", path, ErrInUse, err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("open %s: %w: not a readable bbolt file: %w", path, ErrCorrupt, err)
	default:
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
}

// closeQuietly closes a database that failed recovery; a panic there is as good as closed.
func closeQuietly(db *bolt.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

// createStore creates a new, empty journal file at path: written beside it, synced, and renamed
// into place, so that path never holds a file without oncemq's meta/format. An empty or foreign
// file at path is then never a store that a crash left half-made, and Open can refuse it.
func createStore(path string) error {
	tmp := path + ".new"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("create %s: remove the leftover %s: %w", path, tmp, err)
	}
	db, err := createBolt(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := closeAndSync(db, tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("create %s: %w", path, err)
	}
	return swapIn(tmp, path)
}

// createBolt creates a bbolt file at path with every bucket and the format version, unsynced:
// closeAndSync syncs it once complete.
func createBolt(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, NoSync: true, NoFreelistSync: true,
		FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := db.Update(initBuckets); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return db, nil
}

// closeAndSync closes a file written with NoSync and fsyncs it.
func closeAndSync(db *bolt.DB, path string) error {
	if err := db.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := syncPath(path); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// swapIn renames the complete, synced file tmp over path and syncs the directory: a crash leaves
// either the old path or the new one, whole.
func swapIn(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	if err := syncPath(filepath.Dir(path)); err != nil {
		return fmt.Errorf("sync the directory of %s: %w", path, err)
	}
	return nil
}

// initBuckets writes the buckets and the format version of a new file.
func initBuckets(tx *bolt.Tx) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return fmt.Errorf("create bucket meta: %w", err)
	}
	if err := put(meta, bucketMeta, keyFormat, []byte{formatVersion}); err != nil {
		return fmt.Errorf("write format version: %w", err)
	}
	return ensureBuckets(tx)
}

// ensureBuckets checks that the file is of the current format and creates the buckets it lacks
// (a bucket added by a later release).
func ensureBuckets(tx *bolt.Tx) error {
	version, err := checkFormat(tx)
	if err != nil {
		return err
	}
	if version != formatVersion {
		return fmt.Errorf("bucket meta: %w: format version %d, want %d (not migrated)", ErrCorrupt, version, formatVersion)
	}
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// checkFormat returns the format version of a file: formatV1, whose meta/format is one byte, or
// formatVersion, whose meta/format is sealed like every other value. A bbolt file without it was
// not written by oncemq (Open writes it before a file gets its name).
func checkFormat(tx *bolt.Tx) (byte, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, fmt.Errorf("%w: a bbolt file without oncemq's meta/format: not an oncemq data file", ErrCorrupt)
	}
	v := meta.Get(keyFormat)
	if len(v) == 1 && v[0] == formatV1 {
		return formatV1, nil
	}
	if len(v) == 0 {
		return 0, fmt.Errorf("bucket meta: %w: format version missing", ErrCorrupt)
	}
	body, err := unseal(bucketMeta, keyFormat, v)
	if err != nil {
		return 0, fmt.Errorf("bucket meta key format: %w: %w", ErrCorrupt, err)
	}
	if len(body) != 1 || body[0] != formatVersion {
		return 0, fmt.Errorf("bucket meta: %w: format version %v unknown (this build reads %d and %d)", ErrCorrupt, body, formatV1, formatVersion)
	}
	return formatVersion, nil
}
