package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// errFenced is the answer to a write whose epoch is not the owner's current epoch: the writer
// lost the session to another node and must not change it.
var errFenced = errors.New("fenced: epoch is not the owner's current epoch")

// stateMachine applies committed log entries to a bbolt file on every node. The raft log is the
// durable record (it is synced before a commit is acknowledged); this file is its materialized
// view, written without sync, and rebuilt from the latest snapshot and the log after a restart.
// The fencing check runs here, in log order, identically on every replica: the engine, not the
// writer, decides whether a write from an old owner is refused.
type stateMachine struct {
	path string
	db   *bolt.DB
}

func openStateMachine(dir string) (*stateMachine, error) {
	path := filepath.Join(dir, "fsm.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return nil, fmt.Errorf("open state machine: %w", err)
	}
	return &stateMachine{path: path, db: db}, nil
}

func (s *stateMachine) Apply(l *raft.Log) interface{} {
	return s.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies every committed entry hashicorp/raft hands over in one bbolt transaction.
// The answer of each entry is a string (empty: applied) so that it crosses the node's RPC.
func (s *stateMachine) ApplyBatch(logs []*raft.Log) []interface{} {
	results := make([]interface{}, len(logs))
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i, l := range logs {
			results[i] = ""
			if l.Type != raft.LogCommand {
				continue
			}
			kind, b, err := decodeBatch(l.Data)
			if err != nil {
				results[i] = err.Error()
				continue
			}
			if err := applyEntry(tx, kind, b); err != nil {
				if errors.Is(err, errFenced) {
					results[i] = err.Error()
					continue
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		for i := range results {
			results[i] = err.Error()
		}
	}
	return results
}

// applyEntry checks the owner's epoch and writes the entry. A claim raises the epoch; a batch
// needs the current one.
func applyEntry(tx *bolt.Tx, kind byte, b *Batch) error {
	owners, err := tx.CreateBucketIfNotExists([]byte(bucketOwners))
	if err != nil {
		return err
	}
	var current uint64
	if v := owners.Get([]byte(b.Owner)); len(v) == 8 {
		current = binary.BigEndian.Uint64(v)
	}
	switch kind {
	case cmdClaim:
		if b.Epoch <= current {
			return errFenced
		}
		return owners.Put([]byte(b.Owner), binary.BigEndian.AppendUint64(nil, b.Epoch))
	case cmdBatch:
		if b.Epoch != current {
			return errFenced
		}
		return putRecords(tx, b.Records)
	}
	return fmt.Errorf("unknown entry kind %d", kind)
}

// messageIDs lists the batches whose message is in the state machine.
func (s *stateMachine) messageIDs() ([]uint64, error) {
	var ids []uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucketMsgs))
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, _ []byte) error {
			id, err := batchID(k)
			ids = append(ids, id)
			return err
		})
	})
	return ids, err
}

func (s *stateMachine) Snapshot() (raft.FSMSnapshot, error) {
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{tx: tx}, nil
}

// Restore replaces the file with the snapshot's copy.
func (s *stateMachine) Restore(r io.ReadCloser) error {
	defer r.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	if err := s.db.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(s.path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return fmt.Errorf("reopen state machine: %w", err)
	}
	s.db = db
	return nil
}

type fsmSnapshot struct{ tx *bolt.Tx }

func (f *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := f.tx.WriteTo(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (f *fsmSnapshot) Release() { _ = f.tx.Rollback() }
