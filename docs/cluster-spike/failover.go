package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// failoverResult is one failover measurement: the leader's process killed with SIGKILL while
// writers commit.
type failoverResult struct {
	Engine  string
	Killed  int
	Resume  time.Duration // from the kill to the first acknowledgement of a commit started after it
	MaxGap  time.Duration // longest time without any acknowledgement around the kill
	Acked   int           // batches the writers saw acknowledged
	Present int           // batches read back from the survivors
	Missing int           // acknowledged but not read back: must be 0
	Unacked int           // read back but never acknowledged (the writer gave up or timed out)
}

// ack is one acknowledged batch: when its last attempt started, and when it was acknowledged.
type ack struct {
	id       uint64
	attempt  time.Time
	acked    time.Time
	attempts int
}

// runFailover starts a fresh cluster, lets writers commit for warmup, kills the leader, lets them
// go on until commits resumed and for after, then reads every batch back from the survivors.
func runFailover(engine, dir string, writers int, warmup, after time.Duration, log *slog.Logger) (failoverResult, error) {
	res := failoverResult{Engine: engine}
	s, err := openEngine(engine, dir, false)
	if err != nil {
		return res, err
	}
	defer s.close()
	if err := claimAll(s.client, writers); err != nil {
		return res, err
	}

	var (
		stop    atomic.Bool
		mu      sync.Mutex
		acks    []ack
		killAt  time.Time
		resumed = make(chan struct{})
		once    sync.Once
		wg      sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			for n := uint32(0); !stop.Load(); n++ {
				a, ok := commitUntilAcked(s.client, newBatch(w, n, 1), &stop)
				if !ok {
					return
				}
				mu.Lock()
				acks = append(acks, a)
				if !killAt.IsZero() && a.attempt.After(killAt) {
					once.Do(func() { close(resumed) })
				}
				mu.Unlock()
			}
		})
	}

	time.Sleep(warmup)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	lead, err := s.client.leader(ctx)
	cancel()
	if err != nil {
		stop.Store(true)
		wg.Wait()
		return res, err
	}
	res.Killed = lead
	mu.Lock()
	killAt = time.Now()
	mu.Unlock()
	if err := s.cluster.kill(lead); err != nil {
		stop.Store(true)
		wg.Wait()
		return res, err
	}
	log.Info("killed the leader", "engine", engine, "node", lead)
	select {
	case <-resumed:
	case <-time.After(60 * time.Second):
		log.Warn("commits did not resume within 60s", "engine", engine)
	}
	time.Sleep(after)
	stop.Store(true)
	wg.Wait()

	res.Resume, res.MaxGap = resumeTimes(acks, killAt)
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ids, err := s.client.messageIDs(ctx)
	if err != nil {
		return res, fmt.Errorf("read back from the survivors: %w", err)
	}
	res.Acked, res.Present, res.Missing, res.Unacked = compareReadBack(acks, ids)
	return res, nil
}

// compareReadBack counts the acknowledged batches, the batches read back, the acknowledged ones
// that were not read back, and the ones read back that were never acknowledged.
func compareReadBack(acks []ack, ids []uint64) (acked, present, missing, unacked int) {
	readBack := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		readBack[id] = true
	}
	ackedIDs := make(map[uint64]bool, len(acks))
	for _, a := range acks {
		ackedIDs[a.id] = true
		if !readBack[a.id] {
			missing++
		}
	}
	for id := range readBack {
		if !ackedIDs[id] {
			unacked++
		}
	}
	return len(acks), len(readBack), missing, unacked
}

// commitUntilAcked submits the same batch until it is acknowledged, as an MQTT client resends
// the same PUBLISH with the same packet id; each attempt may wait 2 s. It gives up when stop is
// set between attempts.
func commitUntilAcked(c committer, b *Batch, stop *atomic.Bool) (ack, bool) {
	for attempts := 1; !stop.Load(); attempts++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		t0 := time.Now()
		err := c.Commit(ctx, b)
		cancel()
		if err == nil {
			return ack{id: b.ID, attempt: t0, acked: time.Now(), attempts: attempts}, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ack{}, false
}

// resumeTimes measures, from the kill, when the first commit started after it was acknowledged,
// and the longest stretch without any acknowledgement from one second before the kill on.
func resumeTimes(acks []ack, killAt time.Time) (resume, maxGap time.Duration) {
	resume = -1
	var times []time.Time
	for _, a := range acks {
		if a.attempt.After(killAt) && (resume < 0 || a.acked.Sub(killAt) < resume) {
			resume = a.acked.Sub(killAt)
		}
		if a.acked.After(killAt.Add(-time.Second)) {
			times = append(times, a.acked)
		}
	}
	sortTimes(times)
	for i := 1; i < len(times); i++ {
		if g := times[i].Sub(times[i-1]); g > maxGap {
			maxGap = g
		}
	}
	return resume, maxGap
}
