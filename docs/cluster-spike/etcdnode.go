package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcdNode starts member self of an embedded etcd cluster with its files under dir, with
// etcd's defaults otherwise: the WAL is fdatasynced before a proposal is acknowledged (the
// leader's own append in parallel with sending to the followers), 100 ms heartbeat, 1 s
// election timeout.
func startEtcdNode(dir string, self int, peers []nodeAddrs) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = fmt.Sprintf("n%d", self)
	cfg.Dir = dir
	cfg.LogLevel = "error"
	peer := url.URL{Scheme: "http", Host: peers[self].Peer}
	client := url.URL{Scheme: "http", Host: peers[self].Client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	var initial []string
	for i, p := range peers {
		initial = append(initial, fmt.Sprintf("n%d=http://%s", i, p.Peer))
	}
	cfg.InitialCluster = strings.Join(initial, ",")
	cfg.InitialClusterToken = "cluster-spike"
	cfg.ClusterState = embed.ClusterStateFlagNew

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd member %d: %w", self, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd member %d: %w", self, err)
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd member %d not ready after 30s", self)
	}
}
