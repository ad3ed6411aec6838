package inflight

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// ErrNoBody is wrapped by LoadMessage when the file has no body under the sequence: damage, or a
// caller that lost count of its references.
var ErrNoBody = errors.New("inflight: message body missing")

// bodiesRead counts the message bodies decoded from bucket msgs since the process started. Only
// tests read it: start-up must read the index, never a body (recover_test.go).
var bodiesRead atomic.Int64

// bodies keeps the message bodies that need not be read from the file: those of batches not yet
// committed (which the file does not have yet, so they cannot be evicted), and a cache bounded by
// bytes of those recently written or read.
type bodies struct {
	mu        sync.Mutex
	unwritten map[uint64]unwritten // submitted in a PutMessage, not yet committed
	cache     *bodyCache
}

// unwritten is a body waiting for its commit; puts counts the PutMessage of it in flight (a
// message can be deleted and written again).
type unwritten struct {
	msg  *Message
	puts int
}

// submitted notes the bodies a batch writes; Submit calls it before the committer can see b.
func (bs *bodies) submitted(b *Batch) {
	if b == nil {
		return
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for i := range b.ops {
		if o := &b.ops[i]; o.kind == opPutMessage {
			u := bs.unwritten[o.seq]
			bs.unwritten[o.seq] = unwritten{msg: o.msg, puts: u.puts + 1}
		}
	}
}

// committed moves the bodies b wrote from unwritten to the cache and forgets those it deleted,
// in b's order, and returns the payload bytes b wrote. It runs on the committer after b's commit,
// or after b was refused (the bodies are then not in the file, and no one holds a reference that
// needs them).
func (bs *bodies) committed(b *Batch, stored bool) (written int) {
	if b == nil {
		return 0
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for i := range b.ops {
		switch o := &b.ops[i]; o.kind {
		case opPutMessage:
			if u := bs.unwritten[o.seq]; u.puts > 1 {
				bs.unwritten[o.seq] = unwritten{msg: u.msg, puts: u.puts - 1}
			} else {
				delete(bs.unwritten, o.seq)
			}
			if stored {
				bs.cache.put(o.seq, o.msg)
				written += len(o.msg.Payload)
			}
		case opDeleteMessage:
			bs.cache.remove(o.seq)
		}
	}
	return written
}

// lookup returns the body of seq from memory, if it is there.
func (bs *bodies) lookup(seq uint64) *Message {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if u, ok := bs.unwritten[seq]; ok {
		return u.msg
	}
	return bs.cache.get(seq)
}

func (bs *bodies) keep(seq uint64, m *Message) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.cache.put(seq, m)
}

// LoadMessage returns the body of the message stored under seq, for a PUBLISH about to be sent:
// from a batch not yet committed, from the body cache, from the log (committed, not yet
// checkpointed into the file, so not readable from it), or read from the file (and then cached),
// its checksum checked. The Message it returns is a body only: its references are counted by the
// caller's Handle, never through it. It is safe for concurrent use and takes no lock of the
// caller's; a read from the file is one bbolt read transaction, a B+tree lookup in the memory map.
func (j *Journal) LoadMessage(seq uint64) (*Message, error) {
	if m := j.bodies.lookup(seq); m != nil {
		return m, nil
	}
	if m, ok := j.loggedMessage(seq); ok {
		return m, nil
	}
	var m *Message
	err := guard(func() error {
		return j.db.View(func(tx *bolt.Tx) error {
			var err error
			m, err = readMessage(tx, seq)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load message %d from %s: %w", seq, j.path, err)
	}
	j.bodies.keep(seq, m)
	if j.mapped.add(len(m.Payload)) {
		j.releaseMapped()
	}
	return m, nil
}

// readMessage reads the body stored under seq in bucket msgs of a current file, checks its
// checksum (start-up reads no body: this is where a damaged one is found) and decodes it.
func readMessage(tx *bolt.Tx, seq uint64) (*Message, error) {
	b := tx.Bucket(bucketMsgs)
	if b == nil {
		return nil, ErrNoBody
	}
	k := seqKey(seq)
	v := b.Get(k)
	if v == nil {
		return nil, ErrNoBody
	}
	v, err := unseal(bucketMsgs, k, v)
	if err == nil {
		var m *Message
		if m, err = decodeBody(v); err == nil {
			m.Seq = seq
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: bucket msgs key %q (message %d): %w", ErrCorrupt, k, seq, err)
}

// decodeBody decodes a value of bucket msgs, counted in bodiesRead.
func decodeBody(v []byte) (*Message, error) {
	bodiesRead.Add(1)
	return decodeMessage(v)
}
