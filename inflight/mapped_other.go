//go:build !linux

package inflight

// dropMapped does nothing where madvise is not at hand: the kernel reclaims the mapped pages of
// the file under memory pressure anyway.
func dropMapped(addr uintptr, size int64) error { return nil }
