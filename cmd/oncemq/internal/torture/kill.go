package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// killMoments draws cfg.Kills progress thresholds (acknowledged publishes plus first deliveries)
// in the first 98% of totalProgress: the broker is killed when the progress passes each, so while
// messages flow, whatever the speed of the machine.
func (t *torture) killMoments(totalProgress int64) []int64 {
	rng := rand.New(rand.NewPCG(uint64(t.cfg.Seed), 0x6b696c6c))
	span := max(totalProgress-max(totalProgress/50, 1), 1)
	thresholds := make([]int64, t.cfg.Kills)
	for i := range thresholds {
		thresholds[i] = 1 + rng.Int64N(span)
	}
	slices.Sort(thresholds)
	return thresholds
}

// killer SIGKILLs and restarts the broker as the progress passes each threshold, after a random
// jitter of up to 5ms.
func (t *torture) killer(ctx context.Context, thresholds []int64, totalProgress int64) {
	rng := rand.New(rand.NewPCG(uint64(t.cfg.Seed), 0x6a6974))
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for _, th := range thresholds {
		for t.progress.Load() < th {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-time.After(time.Duration(rng.Int64N(int64(5 * time.Millisecond)))):
		case <-ctx.Done():
			return
		}
		if !t.kill(ctx, totalProgress, false) {
			return
		}
	}
}

// kill is one SIGKILL and restart; false if the broker could not be restarted (the run is over).
func (t *torture) kill(ctx context.Context, totalProgress int64, final bool) bool {
	at := t.since()
	progress := t.progress.Load()
	begin := time.Now()
	if err := t.broker.kill(); err != nil {
		t.fail("kill the broker: %v", err)
		return false
	}
	t.runs.Add(1)
	err := t.broker.start(ctx)
	down := time.Since(begin)
	t.mu.Lock()
	rec := KillRecord{N: len(t.killLog) + 1, AtSeconds: at.Seconds(), Progress: progress,
		DownMillis: float64(down.Microseconds()) / 1000, Final: final}
	t.killLog = append(t.killLog, rec)
	t.mu.Unlock()
	what := fmt.Sprintf("kill %d/%d", rec.N, t.cfg.Kills)
	if final {
		what = "final kill"
	}
	if err != nil {
		if ctx.Err() == nil {
			t.fail("restart the broker after %s: %v", what, err)
		}
		return false
	}
	t.logf("%s at %v (progress %d/%d): broker back in %v", what, at.Round(time.Millisecond), progress, totalProgress,
		down.Round(time.Millisecond))
	return true
}
