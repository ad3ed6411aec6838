package inflight

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// A failed commit is one of two kinds, which the layer above handles differently. The error every
// batch gets wraps ErrFailed and one of these, so errors.Is tells them apart.
var (
	// ErrDiskFull: a write could not get space: the file system is full (ENOSPC), a quota is
	// exhausted (EDQUOT), or the file may not grow (EFBIG, a file size limit). What was written
	// before the failed commit is intact: bbolt writes a transaction's meta page last, after its
	// data pages, so the failed transaction is not part of the file. Closing the journal and
	// opening the file again, once there is space, recovers exactly what was committed.
	ErrDiskFull = errors.New("inflight: disk full")
	// ErrIO: any other failure, an I/O error (EIO) or a failed fsync above all. After a failed
	// fsync the kernel may have dropped the dirty pages or marked them clean, so nothing written
	// since the last good sync can be trusted, not even what this process would read back: the
	// process must end, and the next start recovers from what is on the disk.
	ErrIO = errors.New("inflight: I/O error")
)

// fullErrnos are the errors of a write that had no room, as opposed to one that failed.
var fullErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG}

// bboltResize is how bbolt reports a failed ftruncate when it grows the file. bbolt formats that
// error with %s (go.etcd.io/bbolt db.go, DB.grow), so the errno survives only as its text.
const bboltResize = "file resize error: "

// classify returns ErrDiskFull or ErrIO for the cause of a failed commit.
//
// Only a failed write or file growth counts as a full disk. The same errno from fdatasync is a
// failed sync, which is ErrIO: bbolt returns fdatasync's errno bare, while os.File.WriteAt wraps
// its own in an *os.PathError whose Op is "write". Anything not known to be a full disk, a panic
// in bbolt included, is ErrIO: ending the process costs a restart, healing in place on a file
// that cannot be trusted could cost acknowledged messages.
func classify(cause error) error {
	var pe *os.PathError
	if errors.As(cause, &pe) && (pe.Op == "write" || pe.Op == "truncate") && isFull(pe.Err) {
		return ErrDiskFull
	}
	msg := cause.Error()
	if i := strings.Index(msg, bboltResize); i >= 0 {
		for _, e := range fullErrnos {
			if strings.HasSuffix(msg[i:], e.Error()) {
				return ErrDiskFull
			}
		}
	}
	return ErrIO
}

func isFull(err error) bool {
	for _, e := range fullErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
