package inflight

import (
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// WriteTo writes a consistent copy of the journal file to w, as of the last commit before it
// started: a bbolt read transaction, which the committer does not wait for, so the broker goes on
// committing while the copy is written. The copy is a journal file that Open recovers like the
// original; every batch whose done callback ran before WriteTo was called is in it.
//
// The log is checkpointed first (the committer does it between two rounds), since the copy is the
// bbolt file alone.
func (j *Journal) WriteTo(w io.Writer) (int64, error) {
	if err := j.checkpointForCopy(); err != nil {
		return 0, fmt.Errorf("copy %s: %w", j.path, err)
	}
	var n int64
	err := j.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("copy %s: %w", j.path, err)
	}
	return n, nil
}
