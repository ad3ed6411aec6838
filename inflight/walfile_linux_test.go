package inflight

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// A segment's records land in blocks already written (zeros), not in blocks only allocated: on
// ext4 the first write into an allocated, unwritten block changes the file's extents, and every
// fdatasync that has such a change to commit costs a journal commit besides the data. The extents
// are read with FIEMAP, so the test skips on a file system without it (tmpfs).
func TestLogSegmentWritesIntoWrittenBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oncemq.wal")
	lf, err := openLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	f := lf.(*osLog)
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	extents, err := fileExtents(f.File)
	if err != nil {
		t.Skipf("FIEMAP: %v", err)
	}
	if unwrittenBytes(extents, 0, 4096) == 0 && writtenBytes(extents, 0, checkpointBytes) == checkpointBytes {
		t.Skip("this file system does not allocate unwritten extents")
	}

	// Emptied (at open or after a checkpoint): the first chunk is written zeros.
	if n := unwrittenBytes(extents, 0, zeroChunk); n != 0 {
		t.Errorf("an emptied segment has %d bytes of unwritten extents in its first %d", n, zeroChunk)
	}
	// Records past the first chunk: the committer fills the next one before writing.
	rec := make([]byte, 3000)
	for i := range rec {
		rec[i] = 0xa5
	}
	var end int64
	for end < 2*zeroChunk+5000 {
		if _, err := f.Write(rec); err != nil {
			t.Fatal(err)
		}
		end += int64(len(rec))
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if extents, err = fileExtents(f.File); err != nil {
		t.Fatal(err)
	}
	if n := unwrittenBytes(extents, 0, end); n != 0 {
		t.Errorf("%d bytes of the records' %d are in unwritten extents", n, end)
	}
	if n := unwrittenBytes(extents, end, 3*zeroChunk-end); n != 0 {
		t.Errorf("%d bytes after the last record, up to the chunk's end, are unwritten", n)
	}

	// Emptied after a checkpoint: as much is filled again as the records reached.
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if extents, err = fileExtents(f.File); err != nil {
		t.Fatal(err)
	}
	if n := unwrittenBytes(extents, 0, 3*zeroChunk); n != 0 {
		t.Errorf("after the reset, %d bytes of the %d the records reached are unwritten", n, 3*zeroChunk)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != checkpointBytes || !allZero(data) {
		t.Errorf("after the reset the segment holds %d bytes, zeros: %v; want %d zeros", len(data), allZero(data), checkpointBytes)
	}
}

// extent is one FIEMAP extent: logical offset, length, and whether it is allocated but unwritten.
type extent struct {
	off, len  int64
	unwritten bool
}

// fileExtents returns the extents of f (FS_IOC_FIEMAP, synced first).
func fileExtents(f *os.File) ([]extent, error) {
	const (
		fsIocFiemap      = 0xc020660b
		fiemapFlagSync   = 0x1
		extentLast       = 0x1
		extentUnwritten  = 0x800
		maxExtents       = 256
		fiemapHeaderSize = 32
		fiemapExtentSize = 56
	)
	var out []extent
	var start uint64
	for {
		buf := make([]byte, fiemapHeaderSize+maxExtents*fiemapExtentSize)
		*(*uint64)(unsafe.Pointer(&buf[0])) = start      // fm_start
		*(*uint64)(unsafe.Pointer(&buf[8])) = ^uint64(0) // fm_length
		*(*uint32)(unsafe.Pointer(&buf[16])) = fiemapFlagSync
		*(*uint32)(unsafe.Pointer(&buf[24])) = maxExtents // fm_extent_count
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0])))
		if errno != 0 {
			return nil, errno
		}
		n := *(*uint32)(unsafe.Pointer(&buf[20])) // fm_mapped_extents
		if n == 0 {
			return out, nil
		}
		for i := range int(n) {
			e := buf[fiemapHeaderSize+i*fiemapExtentSize:]
			logical := *(*uint64)(unsafe.Pointer(&e[0]))
			length := *(*uint64)(unsafe.Pointer(&e[16]))
			flags := *(*uint32)(unsafe.Pointer(&e[40]))
			out = append(out, extent{off: int64(logical), len: int64(length), unwritten: flags&extentUnwritten != 0})
			start = logical + length
			if flags&extentLast != 0 {
				return out, nil
			}
		}
	}
}

// unwrittenBytes counts the bytes of [off, off+n) in unwritten extents; writtenBytes, those in written ones.
func unwrittenBytes(extents []extent, off, n int64) int64 { return overlap(extents, off, n, true) }
func writtenBytes(extents []extent, off, n int64) int64   { return overlap(extents, off, n, false) }

func overlap(extents []extent, off, n int64, unwritten bool) int64 {
	var total int64
	for _, e := range extents {
		if e.unwritten != unwritten {
			continue
		}
		lo, hi := max(e.off, off), min(e.off+e.len, off+n)
		if hi > lo {
			total += hi - lo
		}
	}
	return total
}
