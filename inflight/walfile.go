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

// logPath is the log of the data file at path: oncemq.db has oncemq.wal beside it (and its second
// segment, oncemq.wal.1: segmentPaths).
func logPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".wal"
}

// openLogFile opens the log for appending, creating it if missing. A new file's directory entry is
// synced, so that a power loss cannot take away the file that an acknowledged record is in.
func openLogFile(path string) (logFile, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	if os.IsNotExist(statErr) {
		if err := syncPath(filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("create log %s: sync the directory: %w", path, err)
		}
	}
	return osLog{f}, nil
}

// osLog is the log file of the product: Sync is fdatasync where the system has it, since the
// file's size, the one metadata an append changes, is all a read after a power loss needs.
type osLog struct{ *os.File }

func (f osLog) Sync() error { return datasync(f.File) }
