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

// walkReleaseEvery is releaseEvery, a variable so that a test can see a small file cross it.
var walkReleaseEvery = releaseEvery

// walkRelease hands back the mapped pages of a walk through a whole file (start-up reads every
// page of a file that can be many times the heap) every releaseEvery bytes of records: without it
// the pages read stay resident until the walk ends, and a file of a million queued messages put
// its whole size, about 470 MiB, on top of the start-up heap. The transaction keeps bbolt from
// remapping meanwhile (a read transaction blocks a remap; a write transaction remaps only in its
// own goroutine, between our calls), and tx.Size is within the mapping.
type walkRelease struct {
	tx *bolt.Tx
	n  int
}

// add counts the bytes of one record read through the map: its key, its value, and bbolt's
// 16-byte element header.
func (w *walkRelease) add(k, v []byte) {
	if w.n += len(k) + len(v) + 16; w.n < walkReleaseEvery {
		return
	}
	w.n = 0
	_ = dropMapped(w.tx.DB().Info().Data, w.tx.Size()) // best effort, as releaseMapped
}
