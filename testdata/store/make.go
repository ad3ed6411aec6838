//go:build ignore

// make writes the damaged data files of testdata/store, for start-up tests: each folder holds an
// oncemq.db that a broker must refuse to start on. Run from the repository's top folder:
//
//	go run testdata/store/make.go
//
// The files are committed; run this again only to change them, and say why in testdata/README.md.
package main

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/oncemq/oncemq/inflight"
)

// garbageSize is the size of the garbage file: four bbolt pages, so that a reader that trusts the
// first page's size fields would read on.
const garbageSize = 16 << 10

// truncatedSize is where the real store is cut: after its two meta pages (4 KiB each), which are
// intact and point at pages that are no longer in the file. The store's records all sit in the page
// after them; the pages after that are space bbolt keeps for reuse, so a cut there loses nothing and
// the file opens with every record (which is right: nothing is lost).
const truncatedSize = 8 << 10

// now is the fixed clock of the store, so that a rerun writes the same records.
const now = int64(1_767_225_600) * 1e9 // 2026-01-01T00:00:00Z

func main() {
	if err := run(filepath.Join("testdata", "store")); err != nil {
		log.Fatal(err)
	}
}

func run(dir string) error {
	if err := write(filepath.Join(dir, "empty"), nil); err != nil {
		return err
	}
	garbage := make([]byte, garbageSize)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	if err := write(filepath.Join(dir, "garbage"), garbage); err != nil {
		return err
	}
	full, err := realStore()
	if err != nil {
		return err
	}
	if len(full) <= truncatedSize {
		return fmt.Errorf("the real store is %d bytes, not more than the cut at %d", len(full), truncatedSize)
	}
	return write(filepath.Join(dir, "truncated"), full[:truncatedSize])
}

func write(dir string, content []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "oncemq.db"), content, 0o644)
}

// realStore writes a store with one of everything (a session with a subscription, an inbound id,
// an outbound delivery, a queued message, and a retained message) through inflight, and returns
// its bytes.
func realStore() ([]byte, error) {
	tmp, err := os.MkdirTemp("", "oncemq-store-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "oncemq.db")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	j, _, err := inflight.Open(path, &inflight.Options{Logger: quiet, Now: func() int64 { return now }})
	if err != nil {
		return nil, err
	}
	const client = "sub"
	var b inflight.Batch
	b.PutSession(inflight.SessionRecord{ClientID: client, ProtocolVersion: 5, ExpiryInterval: 0xFFFFFFFF, DisconnectedAt: now})
	b.PutSubscription(client, inflight.SubscriptionRecord{Filter: "sensors/#", QoS: 2})
	b.PutInbound(client, 7, 0x00)
	for i, seq := range []uint64{j.NextSeq(), j.NextSeq()} {
		m := &inflight.Message{Seq: seq, Topic: "sensors/kitchen", Payload: []byte(fmt.Sprintf("21.%d", i)), QoS: 2, Created: now}
		m.Ref()
		b.PutMessage(m)
		if i == 0 {
			b.PutOutbound(client, inflight.OutboundRecord{PacketID: 1, State: inflight.PublishSent, QoS: 2, Order: 1, MsgSeq: seq})
		} else {
			b.PutQueued(client, inflight.QueuedRecord{Order: 2, QoS: 2, MsgSeq: seq})
		}
	}
	b.PutRetained(&inflight.Message{Topic: "sensors/status", Payload: []byte("online"), QoS: 1, Retain: true, Created: now})
	done := make(chan error, 1)
	j.Submit(&b, func(err error) { done <- err })
	if err := <-done; err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	if err := j.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
