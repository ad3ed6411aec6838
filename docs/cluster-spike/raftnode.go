package main

import (
	"fmt"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// raftNode is one member of the hashicorp/raft cluster: the raft log and stable store in
// raft-boltdb (bbolt, synced on every append), the state machine in another bbolt file, and a
// net/rpc endpoint through which the driver's writers submit batches.
type raftNode struct {
	raft  *raft.Raft
	fsm   *stateMachine
	peers []nodeAddrs
}

// RaftApplyReply is the answer to one submitted entry. NotLeader with LeaderRPC tells the writer
// where to go instead; Result is the state machine's answer ("" when applied).
type RaftApplyReply struct {
	NotLeader bool
	LeaderRPC string
	Result    string
}

// RaftStatus says whether the node answering is the leader.
type RaftStatus struct {
	IsLeader bool
}

// startRaftNode starts node self of peers with its files under dir. Every node bootstraps the
// same three-voter configuration, which hashicorp/raft accepts.
func startRaftNode(dir string, self int, peers []nodeAddrs) (*raftNode, error) {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(fmt.Sprint(self))
	conf.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: os.Stderr})

	logs, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("open raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	trans, err := raft.NewTCPTransport(peers[self].Peer, nil, 3, 10*time.Second, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("raft transport: %w", err)
	}
	fsm, err := openStateMachine(dir)
	if err != nil {
		return nil, err
	}
	r, err := raft.NewRaft(conf, fsm, logs, logs, snaps, trans)
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}
	var servers []raft.Server
	for i, p := range peers {
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint(i)), Address: raft.ServerAddress(p.Peer)})
	}
	if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && err != raft.ErrCantBootstrap {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	return &raftNode{raft: r, fsm: fsm, peers: peers}, nil
}

// serveRPC answers the driver's writers on addr until the process ends.
func (n *raftNode) serveRPC(addr string) error {
	srv := rpc.NewServer()
	if err := srv.RegisterName("Node", n); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	go srv.Accept(l)
	return nil
}

// Apply replicates one entry and answers once it is committed on a majority and applied here.
func (n *raftNode) Apply(entry []byte, reply *RaftApplyReply) error {
	if n.raft.State() != raft.Leader {
		reply.NotLeader = true
		reply.LeaderRPC = n.leaderRPC()
		return nil
	}
	f := n.raft.Apply(entry, 5*time.Second)
	if err := f.Error(); err != nil {
		if err == raft.ErrNotLeader || err == raft.ErrLeadershipLost {
			reply.NotLeader = true
			return nil
		}
		return err
	}
	reply.Result, _ = f.Response().(string)
	return nil
}

// Status says whether this node leads.
func (n *raftNode) Status(_ struct{}, reply *RaftStatus) error {
	reply.IsLeader = n.raft.State() == raft.Leader
	return nil
}

// MessageIDs lists the batches present, after a barrier so that every entry committed before the
// call is applied. Only the leader answers.
func (n *raftNode) MessageIDs(_ struct{}, reply *[]uint64) error {
	if err := n.raft.Barrier(5 * time.Second).Error(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	ids, err := n.fsm.messageIDs()
	*reply = ids
	return err
}

func (n *raftNode) leaderRPC() string {
	_, id := n.raft.LeaderWithID()
	for i, p := range n.peers {
		if raft.ServerID(fmt.Sprint(i)) == id {
			return p.Client
		}
	}
	return ""
}
