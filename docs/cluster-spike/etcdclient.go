package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdClient commits batches as etcd transactions: if the owner key still holds the writer's
// epoch, then put every record. The compare is evaluated by etcd in log order, so a writer whose
// session moved to another node is refused by the engine.
type etcdClient struct {
	cli *clientv3.Client
}

func newEtcdClient(endpoints []string) (*etcdClient, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return &etcdClient{cli: cli}, nil
}

func ownerKey(owner string) string { return bucketOwners + "/" + owner }

func epochValue(epoch uint64) string { return strconv.FormatUint(epoch, 10) }

// Claim sets the owner's epoch. (The cluster design compares the previous epoch too; the spike's
// owners are claimed once.)
func (c *etcdClient) Claim(ctx context.Context, owner string, epoch uint64) error {
	_, err := c.cli.Put(ctx, ownerKey(owner), epochValue(epoch))
	return err
}

func (c *etcdClient) Commit(ctx context.Context, b *Batch) error {
	ops := make([]clientv3.Op, 0, len(b.Records))
	for _, r := range b.Records {
		ops = append(ops, clientv3.OpPut(r.Bucket+"/"+string(r.Key), string(r.Value)))
	}
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(ownerKey(b.Owner)), "=", epochValue(b.Epoch))).
		Then(ops...).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return errFenced
	}
	return nil
}

// messageIDs reads the batches present with a linearizable read.
func (c *etcdClient) messageIDs(ctx context.Context) ([]uint64, error) {
	resp, err := c.cli.Get(ctx, bucketMsgs+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		id, err := batchID([]byte(strings.TrimPrefix(string(kv.Key), bucketMsgs+"/")))
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// leaderIndex finds which of the endpoints is the leader's.
func (c *etcdClient) leaderIndex(ctx context.Context, endpoints []string) (int, error) {
	for i, ep := range endpoints {
		st, err := c.cli.Status(ctx, ep)
		if err == nil && st.Leader != 0 && st.Header.MemberId == st.Leader {
			return i, nil
		}
	}
	return -1, errors.New("no etcd leader found")
}

func (c *etcdClient) Close() error { return c.cli.Close() }
