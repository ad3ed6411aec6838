package inflight

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// Each cause of a failed commit, as bbolt returns it, is classified: no room to write or grow is a
// full disk; a failed sync, an I/O error, anything else is ErrIO.
func TestClassifyCommitFailure(t *testing.T) {
	write := func(e syscall.Errno) error { return &os.PathError{Op: "write", Path: "oncemq.db", Err: e} }
	truncate := func(e syscall.Errno) error { return &os.PathError{Op: "truncate", Path: "oncemq.db", Err: e} }
	for _, tc := range []struct {
		name  string
		cause error
		want  error
	}{
		{"write ENOSPC", write(syscall.ENOSPC), ErrDiskFull},
		{"write EDQUOT", write(syscall.EDQUOT), ErrDiskFull},
		{"write EFBIG", write(syscall.EFBIG), ErrDiskFull},
		{"write ENOSPC wrapped", fmt.Errorf("commit: %w", write(syscall.ENOSPC)), ErrDiskFull},
		{"truncate EFBIG", truncate(syscall.EFBIG), ErrDiskFull},
		// bbolt's DB.grow: fmt.Errorf("file resize error: %s", err)
		{"bbolt grow EFBIG", fmt.Errorf("file resize error: %s", truncate(syscall.EFBIG)), ErrDiskFull},
		{"bbolt grow ENOSPC", fmt.Errorf("file resize error: %s", truncate(syscall.ENOSPC)), ErrDiskFull},
		{"bbolt grow EIO", fmt.Errorf("file resize error: %s", truncate(syscall.EIO)), ErrIO},
		{"bbolt grow sync ENOSPC", fmt.Errorf("file sync error: %s", &os.PathError{Op: "sync", Path: "oncemq.db", Err: syscall.ENOSPC}), ErrIO},
		// bbolt's Tx.write returns fdatasync's errno bare: a failed sync, whatever the errno.
		{"fdatasync ENOSPC", syscall.ENOSPC, ErrIO},
		{"fdatasync EIO", syscall.EIO, ErrIO},
		{"write EIO", write(syscall.EIO), ErrIO},
		{"write EBADF", write(syscall.EBADF), ErrIO},
		{"read ENOSPC", &os.PathError{Op: "read", Path: "oncemq.db", Err: syscall.ENOSPC}, ErrIO},
		{"bbolt panic", errors.New("commit panicked: page 12 already freed"), ErrIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.cause); got != tc.want {
				t.Errorf("classify(%v) = %v, want %v", tc.cause, got, tc.want)
			}
		})
	}
}
