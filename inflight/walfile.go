package inflight

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// logFile is what the journal needs of its log file. The product writes an *os.File opened for
// appending; the power-loss test writes through one that remembers what a sync covered.
type logFile interface {
	// Write appends p at the end of the file.
	Write(p []byte) (int, error)
	// Sync makes every write before it durable (fdatasync).
	Sync() error
	// Truncate cuts the file to size bytes; later writes append from there.
	Truncate(size int64) error
	Close() error
}

// testWAL, when set, gives the test hooks (walOptions) of the journal opened at path, if a test
// installed some for it, in place of Options': for a journal that a test cannot reach through
// Options, one opened by a broker of package mqtt. Only export_test.go sets it, at init of the
// package's test binary; the product leaves it nil, and no API or binary of the product can set it.
var testWAL func(path string) (walOptions, bool)

// logPath is the log of the data file at path: oncemq.db has oncemq.wal beside it (and its second
// segment, oncemq.wal.1: segmentPaths).
func logPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".wal"
}

// openLogFile opens a log segment for writing at its start, creating it if missing. A new file's
// directory entry is synced, so that a power loss cannot take away the file that an acknowledged
// record is in. The caller empties the segment (Truncate(0)) before the first write.
func openLogFile(path string) (logFile, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	if os.IsNotExist(statErr) {
		if err := syncPath(filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("create log %s: sync the directory: %w", path, err)
		}
	}
	return &osLog{File: f}, nil
}

// osLog is a log segment of the product. Emptying it allocates checkpointBytes of disk to it at
// once (preallocate), so that an append writes inside the file: its fdatasync then has data to
// flush and no file size to journal, which measured 1.5 to 3 times faster on ext4. The zeros after
// the last record read as the end of the log. Sync is fdatasync where the system has it.
type osLog struct {
	*os.File
	off int64 // where the next record goes
}

func (f *osLog) Write(p []byte) (int, error) {
	n, err := f.File.WriteAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *osLog) Truncate(size int64) error {
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.off = size
	if size == 0 && preallocate(f.File, checkpointBytes) != nil {
		// No room for it (a small or full disk): appends grow the file instead, which is
		// slower but the same log. The failure, if the disk is full, shows at the next append.
		return f.File.Truncate(0)
	}
	return nil
}

func (f *osLog) Sync() error { return datasync(f.File) }
