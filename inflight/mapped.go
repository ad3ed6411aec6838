package inflight

import (
	"log/slog"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// releaseEvery is how many bytes of message bodies pass through the file's memory map (written by
// a commit, read by LoadMessage) between two releaseMapped calls.
const releaseEvery = 16 << 20

// mappedBytes counts the body bytes that went through the memory map since the last release.
type mappedBytes struct{ n atomic.Int64 }

// add counts n bytes and reports whether a release is due; it then starts counting afresh.
func (m *mappedBytes) add(n int) bool {
	if m.n.Add(int64(n)) < releaseEvery {
		return false
	}
	m.n.Store(0)
	return true
}

// releaseMapped hands back to the kernel the pages of the file's memory map that this process has
// touched. bbolt maps the whole file; every page it reads through the map (a leaf rewritten by a
// commit, whose old values it copies, a body read to be sent, the page walks at start-up) stays
// resident in the process, so that, left alone, the process's resident memory would grow to the
// size of the file of bodies that moved out of its heap. The pages are clean page cache: dropping
// them from the mapping loses nothing, and a later read maps them again from the page cache or the
// disk. It runs inside a read transaction, which keeps bbolt from remapping the file meanwhile
// (a remap waits for every read transaction), and only over the part of the map the file fills.
func (j *Journal) releaseMapped() {
	err := j.db.View(func(tx *bolt.Tx) error {
		return dropMapped(j.db.Info().Data, tx.Size())
	})
	if err != nil {
		j.log.Warn("inflight: could not release the file's mapped pages", slog.String("path", j.path), slog.Any("error", err))
	}
}
