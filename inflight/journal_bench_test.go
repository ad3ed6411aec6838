package inflight

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkJournal measures group commit. One op is the batch of one QoS 2 PUBLISH routed to one
// subscriber: the inbound id, the message and the outbound entry. Each writer submits a batch and
// waits for its done before the next, as a connection waits for the commit before its PUBREC, so
// writers is the number of batches that can wait for one sync.
//
// records/s counts changes committed per second; batches/commit is how many batches shared a sync;
// us/commit is the mean time of a commit (write and sync); max-us/batch is the longest a batch
// waited for its done, which shows a checkpoint's stall.
// With sync=always the figures depend on the disk's fdatasync latency; the test file lives in
// $TMPDIR.
func BenchmarkJournal(b *testing.B) {
	for _, writers := range []int{1, 16, 256} {
		for _, noSync := range []bool{false, true} {
			mode := "always"
			if noSync {
				mode = "none"
			}
			b.Run(fmt.Sprintf("writers=%d/sync=%s", writers, mode), func(b *testing.B) {
				benchmarkJournal(b, writers, noSync)
			})
		}
	}
}

func benchmarkJournal(b *testing.B, writers int, noSync bool) {
	path := filepath.Join(b.TempDir(), "oncemq.db")
	var commitTime atomic.Int64
	onCommit := func(_ int, took time.Duration) { commitTime.Add(int64(took)) }
	j, _, err := Open(path, &Options{NoSync: noSync, Logger: slog.New(slog.DiscardHandler), OnCommit: onCommit})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	payload := []byte("0123456789abcdef")

	var next, slowest atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			publisher := fmt.Sprintf("publisher-%d", w)
			subscriber := fmt.Sprintf("subscriber-%d", w)
			done := make(chan error, 1)
			for i := uint64(0); next.Add(1) <= int64(b.N); i++ {
				id := uint16(i%maxPacketID) + 1
				m := &Message{Seq: j.NextSeq(), Topic: "bench/topic", Payload: payload, QoS: 2}
				var batch Batch
				batch.PutInbound(publisher, id, 0)
				batch.PutMessage(m)
				batch.PutOutbound(subscriber, OutboundRecord{PacketID: id, State: PublishSent, QoS: 2, Order: i, MsgSeq: m.Seq})
				start := time.Now()
				j.Submit(&batch, func(err error) { done <- err })
				if err := <-done; err != nil {
					b.Error(err)
					return
				}
				took := int64(time.Since(start))
				for cur := slowest.Load(); took > cur && !slowest.CompareAndSwap(cur, took); cur = slowest.Load() {
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()

	st := j.Stats()
	b.ReportMetric(float64(st.Ops)/b.Elapsed().Seconds(), "records/s")
	if st.Commits > 0 {
		b.ReportMetric(float64(st.Batches)/float64(st.Commits), "batches/commit")
		b.ReportMetric(float64(commitTime.Load())/float64(st.Commits)/1e3, "us/commit")
	}
	b.ReportMetric(float64(slowest.Load())/1e3, "max-us/batch")
}

// BenchmarkLoadMessage measures LoadMessage reading a body from the file (a cache of one byte keeps
// nothing), for the bodies of 10,000 queued messages of each size, in random order: the cost the
// session layer pays under Broker.mu to send a message whose body is not in memory.
func BenchmarkLoadMessage(b *testing.B) {
	for _, size := range []int{64, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			j, _, _ := openTest(b, "", &Options{NoSync: true, MessageCache: 1, Logger: slog.New(slog.DiscardHandler)})
			const n = 10000
			seqs := make([]uint64, 0, n)
			for k := 0; k < n; k += 1000 {
				var batch Batch
				for i := range 1000 {
					m := &Message{Seq: j.NextSeq(), Topic: "bench/t", Payload: make([]byte, size), QoS: 1}
					batch.PutMessage(m)
					batch.PutQueued("c", QueuedRecord{Order: uint64(k + i + 1), QoS: 1, MsgSeq: m.Seq})
					seqs = append(seqs, m.Seq)
				}
				mustCommit(b, j, &batch)
			}
			rand.Shuffle(len(seqs), func(i, k int) { seqs[i], seqs[k] = seqs[k], seqs[i] })
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := range b.N {
				if _, err := j.LoadMessage(seqs[i%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
