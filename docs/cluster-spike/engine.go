package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// committer is what a writer needs from an engine: claim a session's ownership at an epoch, and
// commit a batch under it, returning only once the batch is durable as the engine promises.
type committer interface {
	Claim(ctx context.Context, owner string, epoch uint64) error
	Commit(ctx context.Context, b *Batch) error
	Close() error
}

// readBack is what the failover check needs: the cluster's committed batches, and its leader.
type readBack interface {
	committer
	messageIDs(ctx context.Context) ([]uint64, error)
	leader(ctx context.Context) (int, error)
}

// setup is one engine, ready for writers, in a fresh data folder.
type setup struct {
	client  readBack // nil for the single-node baseline
	commit  committer
	cluster *cluster
}

func (s *setup) close() {
	if s.commit != nil {
		_ = s.commit.Close()
	}
	if s.cluster != nil {
		s.cluster.stop()
	}
}

// openEngine starts engine under a new folder of dir. With leaderOnly, the etcd client talks to
// the leader's endpoint only, as the raft client does once it found the leader; without it, to
// all three, as a broker node would after a failure.
func openEngine(engine, dir string, leaderOnly bool) (*setup, error) {
	dir, err := os.MkdirTemp(dir, engine+"-")
	if err != nil {
		return nil, err
	}
	if engine == "bbolt" {
		g, err := openGroupCommit(dir)
		if err != nil {
			return nil, err
		}
		return &setup{commit: g}, nil
	}
	c, err := startCluster(engine, dir, 3)
	if err != nil {
		return nil, err
	}
	s := &setup{cluster: c}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch engine {
	case "etcd":
		endpoints := c.clientAddrs()
		probe, err := newEtcdClient(endpoints)
		if err != nil {
			s.close()
			return nil, err
		}
		lead, err := waitLeader(ctx, func(ctx context.Context) (int, error) { return probe.leaderIndex(ctx, endpoints) })
		probe.Close()
		if err != nil {
			s.close()
			return nil, err
		}
		if leaderOnly {
			endpoints = endpoints[lead : lead+1]
		}
		cli, err := newEtcdClient(endpoints)
		if err != nil {
			s.close()
			return nil, err
		}
		s.client = &etcdReadBack{etcdClient: cli, endpoints: c.clientAddrs()}
	case "raft":
		cli := newRaftClient(c.peers)
		if _, err := waitLeader(ctx, cli.leaderIndex); err != nil {
			cli.Close()
			s.close()
			return nil, err
		}
		s.client = &raftReadBack{raftClient: cli}
	default:
		s.close()
		return nil, fmt.Errorf("unknown engine %q", engine)
	}
	s.commit = s.client
	return s, nil
}

func waitLeader(ctx context.Context, find func(context.Context) (int, error)) (int, error) {
	for {
		i, err := find(ctx)
		if err == nil {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no leader elected: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type etcdReadBack struct {
	*etcdClient
	endpoints []string
}

func (e *etcdReadBack) leader(ctx context.Context) (int, error) {
	return e.leaderIndex(ctx, e.endpoints)
}

type raftReadBack struct{ *raftClient }

func (r *raftReadBack) leader(ctx context.Context) (int, error) { return r.leaderIndex(ctx) }

// tempRoot is where a run keeps its data: a new folder under the system's temporary folder
// unless --dir names one.
func tempRoot(dir string) (string, error) {
	if dir != "" {
		return dir, os.MkdirAll(dir, 0o700)
	}
	return os.MkdirTemp("", "cluster-spike-")
}

func nodeLogs(dir string) string { return filepath.Join(dir, "*", "*.log") }
