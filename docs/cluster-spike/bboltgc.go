package main

import (
	"context"
	"fmt"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// groupCommit is the single-node baseline: the broker's journal reduced to its core. One
// committer goroutine takes whatever batches are waiting, writes them in one bbolt transaction,
// syncs once (bbolt's default: fdatasync on commit), and then answers each of them.
type groupCommit struct {
	db       *bolt.DB
	requests chan commitRequest
	done     chan struct{}
}

type commitRequest struct {
	batch  *Batch
	result chan error
}

func openGroupCommit(dir string) (*groupCommit, error) {
	db, err := bolt.Open(filepath.Join(dir, "single.db"), 0o600, nil)
	if err != nil {
		return nil, fmt.Errorf("open single-node store: %w", err)
	}
	g := &groupCommit{db: db, requests: make(chan commitRequest, 1024), done: make(chan struct{})}
	go g.run()
	return g, nil
}

func (g *groupCommit) Claim(ctx context.Context, owner string, epoch uint64) error { return nil }

func (g *groupCommit) Commit(ctx context.Context, b *Batch) error {
	req := commitRequest{batch: b, result: make(chan error, 1)}
	select {
	case g.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-req.result
}

func (g *groupCommit) run() {
	defer close(g.done)
	for first := range g.requests {
		pending := []commitRequest{first}
	drain:
		for {
			select {
			case r, ok := <-g.requests:
				if !ok {
					break drain
				}
				pending = append(pending, r)
			default:
				break drain
			}
		}
		err := g.db.Update(func(tx *bolt.Tx) error {
			for _, r := range pending {
				if err := putRecords(tx, r.batch.Records); err != nil {
					return err
				}
			}
			return nil
		})
		for _, r := range pending {
			r.result <- err
		}
	}
}

func (g *groupCommit) Close() error {
	close(g.requests)
	<-g.done
	return g.db.Close()
}

// putRecords writes records into their buckets; writing the same record twice leaves the same
// state, which is what makes replaying a batch harmless.
func putRecords(tx *bolt.Tx, records []Record) error {
	for _, r := range records {
		bk, err := tx.CreateBucketIfNotExists([]byte(r.Bucket))
		if err != nil {
			return fmt.Errorf("bucket %s: %w", r.Bucket, err)
		}
		if err := bk.Put(r.Key, r.Value); err != nil {
			return fmt.Errorf("put into %s: %w", r.Bucket, err)
		}
	}
	return nil
}
