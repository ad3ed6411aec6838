package inflight

import (
	"fmt"
	"log/slog"
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
