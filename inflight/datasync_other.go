//go:build !linux

package inflight

import "os"

// datasync flushes f (fsync: this system has no fdatasync the standard library exposes).
func datasync(f *os.File) error { return f.Sync() }

// preallocate does nothing here: appends grow the file.
func preallocate(*os.File, int64) error { return nil }
