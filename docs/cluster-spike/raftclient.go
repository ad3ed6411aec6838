package main

import (
	"context"
	"errors"
	"fmt"
	"net/rpc"
	"sync"
	"time"
)

// raftClient submits entries to the raft cluster's leader over net/rpc, following NotLeader
// answers and trying the other nodes when the leader cannot be reached. hashicorp/raft has no
// client protocol of its own: forwarding to the leader is the embedding program's job.
type raftClient struct {
	nodes []nodeAddrs

	mu      sync.Mutex
	leader  string                 // guarded by mu
	clients map[string]*rpc.Client // guarded by mu
	next    int                    // guarded by mu: node to try when the leader is unknown
}

func newRaftClient(nodes []nodeAddrs) *raftClient {
	return &raftClient{nodes: nodes, clients: map[string]*rpc.Client{}}
}

var errNoLeader = errors.New("no leader reachable")

func (c *raftClient) Claim(ctx context.Context, owner string, epoch uint64) error {
	return c.submit(ctx, (&Batch{Owner: owner, Epoch: epoch}).encode(cmdClaim))
}

func (c *raftClient) Commit(ctx context.Context, b *Batch) error {
	return c.submit(ctx, b.encode(cmdBatch))
}

// submit sends the entry until a leader applied it or ctx ends. A retry after an unclear failure
// may apply the entry twice: applying a batch is idempotent.
func (c *raftClient) submit(ctx context.Context, entry []byte) error {
	for {
		addr := c.target()
		var reply RaftApplyReply
		err := c.call(ctx, addr, "Node.Apply", entry, &reply)
		switch {
		case err == nil && !reply.NotLeader:
			if reply.Result != "" {
				return errors.New(reply.Result)
			}
			return nil
		case err == nil:
			c.redirect(addr, reply.LeaderRPC)
		default:
			c.redirect(addr, "")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", errNoLeader, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (c *raftClient) target() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == "" {
		c.leader = c.nodes[c.next%len(c.nodes)].Client
		c.next++
	}
	return c.leader
}

// redirect forgets addr as the leader, and takes hint as the new one if there is one.
func (c *raftClient) redirect(addr, hint string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == addr {
		c.leader = hint
	}
}

// call makes one RPC, dialling if needed; a broken connection is dropped so that the next call
// dials again.
func (c *raftClient) call(ctx context.Context, addr, method string, args, reply any) error {
	c.mu.Lock()
	cl := c.clients[addr]
	c.mu.Unlock()
	if cl == nil {
		var err error
		if cl, err = rpc.Dial("tcp", addr); err != nil {
			return err
		}
		c.mu.Lock()
		if old := c.clients[addr]; old != nil {
			cl.Close()
			cl = old
		} else {
			c.clients[addr] = cl
		}
		c.mu.Unlock()
	}
	call := cl.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		if errors.Is(call.Error, rpc.ErrShutdown) || isConnError(call.Error) {
			c.drop(addr, cl)
		}
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

func isConnError(err error) bool {
	var se rpc.ServerError
	return err != nil && !errors.As(err, &se)
}

func (c *raftClient) drop(addr string, cl *rpc.Client) {
	c.mu.Lock()
	if c.clients[addr] == cl {
		delete(c.clients, addr)
	}
	c.mu.Unlock()
	cl.Close()
}

// leaderIndex finds the node that leads now.
func (c *raftClient) leaderIndex(ctx context.Context) (int, error) {
	for i, n := range c.nodes {
		var st RaftStatus
		if err := c.call(ctx, n.Client, "Node.Status", struct{}{}, &st); err == nil && st.IsLeader {
			return i, nil
		}
	}
	return -1, errNoLeader
}

// messageIDs reads the batches present from the leader.
func (c *raftClient) messageIDs(ctx context.Context) ([]uint64, error) {
	i, err := c.leaderIndex(ctx)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	err = c.call(ctx, c.nodes[i].Client, "Node.MessageIDs", struct{}{}, &ids)
	return ids, err
}

func (c *raftClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
	return nil
}
