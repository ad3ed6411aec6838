package inflight

import (
	"fmt"
	"syscall"
)

// dropMapped drops the pages of [addr, addr+size) from the process's mappings (madvise
// MADV_DONTNEED): for a shared file mapping the contents come back from the file at the next read.
func dropMapped(addr uintptr, size int64) error {
	if addr == 0 || size <= 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(size), syscall.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("madvise: %w", errno)
	}
	return nil
}
