package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// loadResult is one throughput measurement.
type loadResult struct {
	Engine   string
	Writers  int
	Batches  int
	Errors   int
	Elapsed  time.Duration
	P50, P99 time.Duration
}

func (r loadResult) perSecond() float64 { return float64(r.Batches) / r.Elapsed.Seconds() }

// runLoad runs writers concurrent writers, each committing one batch at a time (as a publisher
// waits for PUBREC), for d, and measures every commit.
func runLoad(c committer, engine string, writers int, d time.Duration) (loadResult, error) {
	if err := claimAll(c, writers); err != nil {
		return loadResult{}, err
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      int
		wg        sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range writers {
		wg.Go(func() {
			var own []time.Duration
			failed := 0
			for n := uint32(0); time.Now().Before(deadline); n++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				t0 := time.Now()
				err := c.Commit(ctx, newBatch(w, n, 1))
				cancel()
				if err != nil {
					failed++
					continue
				}
				own = append(own, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, own...)
			errs += failed
			mu.Unlock()
		})
	}
	wg.Wait()
	r := loadResult{Engine: engine, Writers: writers, Batches: len(latencies), Errors: errs, Elapsed: time.Since(start)}
	r.P50, r.P99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
	return r, nil
}

// claimAll makes every writer the owner of its session at epoch 1.
func claimAll(c committer, writers int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for w := range writers {
		if err := c.Claim(ctx, fmt.Sprintf("pub-%04d", w), 1); err != nil {
			return fmt.Errorf("claim pub-%04d: %w", w, err)
		}
	}
	return nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[int(float64(len(d)-1)*p)]
}
