package inflight

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// compactTxSize bounds one write transaction of the copy, so that a large file is copied in
// pieces instead of in one transaction held in memory.
const compactTxSize = 64 << 20

// Compact rewrites the data file at path without its free pages, which bbolt never gives back to
// the file system, and returns the sizes before and after. The copy is written to a new file
// beside it, synced, and renamed over path, and the directory is synced: a crash at any point
// leaves either the old file or the complete new one. path stays locked throughout, so no broker
// starts on it meanwhile; Compact fails with ErrInUse while a broker holds it.
func Compact(path string) (before, after int64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	// A damaged file is refused: the copy would carry its damage on, and the original is what
	// `oncemq repair` needs. It is read through a read-only handle first: a handle for writing
	// walks every page in a goroutine of bbolt's, where a damaged page panics unrecovered.
	if err := checkClean(path); err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w (run oncemq repair)", path, err)
	}
	src, err := openBolt(path, false, false) // exclusive lock; the checkpoint below writes
	if err != nil {
		return 0, 0, err
	}
	defer closeQuietly(src)
	// The log's records go into the file first (a synced commit), and the log is emptied: the
	// copy is the bbolt file alone.
	if err := checkpointLog(src, path, slog.Default()); err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return 0, 0, fmt.Errorf("compact %s: remove the leftover %s: %w", path, tmp, err)
	}
	if err := copyCompacted(src, tmp); err != nil {
		_ = os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return 0, 0, fmt.Errorf("compact %s: swap in the copy: %w", path, err)
	}
	if err := syncPath(filepath.Dir(path)); err != nil {
		return 0, 0, fmt.Errorf("compact %s: sync the directory: %w", path, err)
	}
	nst, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	return st.Size(), nst.Size(), nil
}

// copyCompacted writes src's buckets into a new file at dst and syncs it.
func copyCompacted(src *bolt.DB, dst string) error {
	db, err := bolt.Open(dst, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if err := guard(func() error { return bolt.Compact(db, src, compactTxSize) }); err != nil {
		_ = db.Close()
		return fmt.Errorf("copy into %s: %w", dst, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close %s: %w", dst, err)
	}
	return syncPath(dst)
}

// syncPath fsyncs a file or a directory.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
