package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// nodeAddrs are one node's loopback addresses: Peer for the engine's replication traffic, Client
// for the writers (etcd's client URL, or the raft node's RPC endpoint).
type nodeAddrs struct {
	Peer   string
	Client string
}

func formatPeers(peers []nodeAddrs) string {
	var parts []string
	for _, p := range peers {
		parts = append(parts, p.Peer+","+p.Client)
	}
	return strings.Join(parts, ";")
}

func parsePeers(s string) ([]nodeAddrs, error) {
	var peers []nodeAddrs
	for _, part := range strings.Split(s, ";") {
		peer, client, ok := strings.Cut(part, ",")
		if !ok {
			return nil, fmt.Errorf("peer %q: want PEER,CLIENT", part)
		}
		peers = append(peers, nodeAddrs{Peer: peer, Client: client})
	}
	return peers, nil
}

// runNode is the child process the driver starts for one cluster member. It prints "ready" once
// it serves, and ends when its standard input closes (the driver stopped it or died) or after
// --max-life, whichever comes first, so that no node outlives a run.
func runNode(args []string) error {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	engine := fs.String("engine", "", "etcd or raft")
	self := fs.Int("id", 0, "index of this node in --peers")
	dir := fs.String("dir", "", "data directory of this node")
	peerList := fs.String("peers", "", "PEER,CLIENT;PEER,CLIENT;... for every node")
	maxLife := fs.Duration("max-life", 10*time.Minute, "exit after this long whatever happens")
	if err := fs.Parse(args); err != nil {
		return err
	}
	peers, err := parsePeers(*peerList)
	if err != nil {
		return err
	}
	switch *engine {
	case "etcd":
		e, err := startEtcdNode(*dir, *self, peers)
		if err != nil {
			return err
		}
		defer e.Close()
	case "raft":
		n, err := startRaftNode(*dir, *self, peers)
		if err != nil {
			return err
		}
		if err := n.serveRPC(peers[*self].Client); err != nil {
			return err
		}
		defer n.raft.Shutdown()
	default:
		return fmt.Errorf("unknown engine %q", *engine)
	}
	fmt.Println("ready")
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-stdinClosed:
	case <-time.After(*maxLife):
	}
	return nil
}
