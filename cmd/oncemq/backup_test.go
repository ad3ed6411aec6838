package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/internal/childproc"
	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/mqtt"
)

const (
	backupSubID      = "backup-sub"
	backupPublishers = 3
	backupMessages   = 400 // per publisher
	backupAt         = 150 // the backup begins once a publisher has this many PUBRECs
)

// acked records the messages whose PUBREC arrived, across publishers.
type acked struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (a *acked) add(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys[key] = true
}

func (a *acked) snapshot() map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]bool, len(a.keys))
	for k := range a.keys {
		out[k] = true
	}
	return out
}

// A backup taken while QoS 2 publishers run holds every message acknowledged (PUBREC) before the
// backup request began, exactly once: restored into a new data directory, a broker started on it
// delivers each to the offline QoS 2 subscriber's queue once, and nothing twice.
func TestBackupUnderQoS2LoadRestoresExactlyOnce(t *testing.T) {
	t.Parallel()
	bin := oncemqtest.Build(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("backup-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, t.TempDir(), nil, "--http-listen", "127.0.0.1:0", "--admin-token", tokenFile)
	httpAddr := adminAddr(t, b)
	sub := dialRaw(t, b.Addr, "subscriber")
	sub.connect(backupSubID, false)
	sub.subscribe(1, crashTopic, 2)
	sub.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}})
	sub.untilClosed() // offline from now on: every message is queued for it

	got := &acked{keys: map[string]bool{}}
	reached := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for p := range backupPublishers {
		pub := dialRaw(t, b.Addr, fmt.Sprintf("publisher %d", p))
		pub.connect(fmt.Sprintf("backup-pub-%d", p), false)
		wg.Go(func() {
			for i := range backupMessages {
				key, id := fmt.Sprintf("p%d-%04d", p, i), uint16(i+1)
				pub.publishQoS2(id, key)
				got.add(key)
				if i+1 == backupAt {
					once.Do(func() { close(reached) })
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-reached:
	case <-finished: // a publisher failed before
		t.Fatalf("the publishers ended before %d PUBRECs", backupAt)
	}
	before := got.snapshot() // every PUBREC that arrived before the backup request begins
	out := filepath.Join(t.TempDir(), "backup.db")
	cmd := exec.Command(bin, "backup", "--http", httpAddr, "--out", out, "--token-file", tokenFile)
	cmd.Env = childproc.EnvironWithout("ONCEMQ_")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oncemq backup: %v\n%s", err, msg)
	}
	<-finished
	t.Logf("backup began after %d PUBRECs; %d in all", len(before), len(got.snapshot()))

	restored := t.TempDir()
	if err := os.Rename(out, filepath.Join(restored, mqtt.DataFile)); err != nil {
		t.Fatal(err)
	}
	r := startBroker(t, restored, nil)
	watcher := resume(t, r, "subscriber on the restored broker", backupSubID)
	pub := dialRaw(t, r.Addr, "sentinel publisher")
	pub.connect("backup-sentinel", false)
	pub.publishQoS2(1, sentinel)
	counts := map[string]int{}
	for _, p := range payloads(watcher.receiveUntilSentinel()) {
		counts[p]++
	}
	for key := range before {
		if counts[key] != 1 {
			t.Errorf("%s, acknowledged before the backup began, delivered %d times from the restored store; want once", key, counts[key])
		}
	}
	for key, n := range counts {
		if n > 1 {
			t.Errorf("%s delivered %d times from the restored store", key, n)
		}
	}
}
