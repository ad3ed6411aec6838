package inflight

import (
	"cmp"
	"errors"
	"fmt"
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
// durable state back. Sessions whose expiry passed while the broker was down are removed first, and
// sessions that were connected when it stopped are marked disconnected now, so that their expiry
// counts from the restart.
//
// Open fails, never returning an empty state, when the file is locked by another process or is not
// a journal this build can read: starting empty would drop every message already acknowledged.
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
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, nil, fmt.Errorf("open %s: create directory: %w", path, err)
	}
	now := o.Now()
	var pre *recovery
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		if pre, err = inspect(path, now, o.Logger); err != nil {
			return nil, nil, err
		}
	}
	db, err := openBolt(path, false, o.NoSync)
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
	}
	rec, lastSeq, err := j.recoverState(pre, now)
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

// initBuckets creates the buckets of a new file and checks the format version of an existing one.
// A file with buckets but no format version was not written by oncemq.
func initBuckets(tx *bolt.Tx) error {
	if err := checkFormat(tx); err != nil {
		return err
	}
	if tx.Bucket(bucketMeta) == nil {
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return fmt.Errorf("create bucket meta: %w", err)
		}
		if err := meta.Put(keyFormat, []byte{formatVersion}); err != nil {
			return fmt.Errorf("write format version: %w", err)
		}
	}
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// checkFormat checks the format version of a file, if it has one. A file with buckets but no format
// version was not written by oncemq.
func checkFormat(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		foreign := false
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error {
			foreign = true
			return nil
		})
		if foreign {
			return fmt.Errorf("%w: a bbolt file, but not an oncemq journal (no meta bucket)", ErrCorrupt)
		}
		return nil
	}
	v := meta.Get(keyFormat)
	if len(v) != 1 {
		return fmt.Errorf("bucket meta: %w: format version missing", ErrCorrupt)
	}
	if v[0] != formatVersion {
		return fmt.Errorf("bucket meta: %w: format version %d unknown (this build reads %d)", ErrCorrupt, v[0], formatVersion)
	}
	return nil
}
