package inflight

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
)

// BenchmarkRecover measures Open of a store holding 200,000 queued small messages (100 offline
// sessions of 2,000 each, 16-byte payloads): the start-up recovery a broker does before it accepts
// connections. One op is one Open and Close of the same file; the file is written once, outside
// the timing.
func BenchmarkRecover(b *testing.B) {
	const sessions, perSession = 100, 2000
	path := filepath.Join(b.TempDir(), "oncemq.db")
	quiet := &Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)}
	j, _, err := Open(path, quiet)
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte("0123456789abcdef")
	for s := range sessions {
		client := fmt.Sprintf("subscriber-%03d", s)
		var batch Batch
		batch.PutSession(SessionRecord{ClientID: client, ProtocolVersion: 5, ExpiryInterval: neverExpires, DisconnectedAt: 1})
		for i := range perSession {
			m := &Message{Seq: j.NextSeq(), Topic: "bench/topic", Payload: payload, QoS: 2}
			batch.PutMessage(m)
			batch.PutQueued(client, QueuedRecord{Order: uint64(i + 1), QoS: 2, MsgSeq: m.Seq})
		}
		done := make(chan error, 1)
		j.Submit(&batch, func(err error) { done <- err })
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		j, rec, err := Open(path, quiet)
		if err != nil {
			b.Fatal(err)
		}
		if len(rec.Messages) != sessions*perSession {
			b.Fatalf("recovered %d messages", len(rec.Messages))
		}
		if err := j.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
