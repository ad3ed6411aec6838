package inflight

import (
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back (fdatasync).
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// preallocate allocates size bytes of disk to f, which must be empty, and sets its size: zeros.
// A file system that cannot (EOPNOTSUPP) leaves the file empty; appends then grow it.
func preallocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}
