package torture

import (
	"context"
	"slices"
	"time"
)

// killerRun is the killer goroutine of a run.
type killerRun struct {
	thresholds    []int64 // progress values at which it kills, ascending
	totalProgress int64
	stop          context.CancelFunc
	done          chan struct{}
}

// publishAndDrain runs the publishers while the killer kills the broker, waits until every
// subscriber has every message (the drain), then kills once more and waits for quiet. It returns
// what the subscribers must have received, nil if the run ended before the publishers did.
func (t *torture) publishAndDrain(ctx context.Context, cl *clients, rep *Report) *expectation {
	total := t.cfg.Publishers * t.cfg.Messages
	receivers := len(cl.subs)
	if t.cfg.Shared > 0 {
		receivers = 1 // the group gets each message once
	}
	k := t.startKiller(ctx, int64(total)*int64(1+receivers))
	defer k.stop()
	pubEnd := t.publish(ctx, cl, rep)

	// Drain: wait until every subscriber has every message, or for no progress.
	var exp *expectation
	drained := false
	if ctx.Err() == nil {
		exp = expectationOf(cl.pubs) // the publishers are done
		drained = t.drain(ctx, cl.subs, exp, true, nil)
	}
	// The drain lasted until the last first delivery; the rate counts the deliveries up to then.
	lastProgress := time.Unix(0, t.progAt.Load())
	rep.DrainSeconds = max(lastProgress.Sub(pubEnd).Seconds(), 0)

	// Every kill moment has passed if the progress reached the last one; then the killer finishes
	// its last restart. Otherwise (lost messages, refusals) some moments never come.
	if n := len(k.thresholds); n > 0 && t.progress.Load() < k.thresholds[n-1] {
		k.stop()
	}
	select {
	case <-k.done:
	case <-ctx.Done():
		k.stop()
		<-k.done
	}
	if ctx.Err() == nil && exp != nil {
		t.finalKill(ctx, cl.subs, exp, drained, k.totalProgress)
	}
	return exp
}

// startKiller starts the goroutine that kills the broker at the run's kill moments.
func (t *torture) startKiller(ctx context.Context, totalProgress int64) *killerRun {
	k := &killerRun{thresholds: t.killMoments(totalProgress), totalProgress: totalProgress, done: make(chan struct{})}
	var killerCtx context.Context
	killerCtx, k.stop = context.WithCancel(ctx)
	go func() { defer close(k.done); t.killer(killerCtx, k.thresholds, totalProgress) }()
	return k
}

// publish runs the publishers until each has every message acknowledged and complete, or ctx
// ends, and returns when that was.
func (t *torture) publish(ctx context.Context, cl *clients, rep *Report) time.Time {
	pubStart := time.Now()
	for _, p := range cl.pubs {
		cl.pubsWG.Add(1)
		go func() { defer cl.pubsWG.Done(); p.run(cl.ctx) }()
	}
	pubsDone := make(chan struct{})
	go func() { cl.pubsWG.Wait(); close(pubsDone) }()
	select {
	case <-pubsDone:
	case <-ctx.Done():
	}
	pubEnd := time.Now()
	rep.PublishSeconds = pubEnd.Sub(pubStart).Seconds()
	if ctx.Err() == nil {
		t.logf("publishers done at %v: %d messages in %.2fs", t.since().Round(time.Millisecond),
			t.cfg.Publishers*t.cfg.Messages, rep.PublishSeconds)
	}
	return pubEnd
}

// finalKill kills the broker once more, so that every subscriber resumes its session on a broker
// that recovered the final state, then waits for quiet: a redelivery counted now is a duplicate. If
// the drain gave up (drained false), messages are missing: it only waits for the resumption and
// quiet.
func (t *torture) finalKill(ctx context.Context, subs []*subscriber, exp *expectation, drained bool, totalProgress int64) {
	var before []int
	if t.cfg.Kills > 0 && t.cfg.FinalKill {
		for _, s := range subs {
			before = append(before, s.state(exp).connections)
		}
		t.kill(ctx, totalProgress, true)
	}
	resumed := func(st []subscriberState) bool {
		for i := range before {
			if st[i].connections <= before[i] {
				return false
			}
		}
		return true
	}
	if !t.drain(ctx, subs, exp, drained, resumed) && ctx.Err() == nil && !resumed(t.states(subs, exp)) {
		t.fail("not every subscriber resumed its session after the final restart")
	}
}

// drain waits until every subscriber has every expected message and no acknowledgement pending (if
// complete), ready (if not nil) holds, and nothing was delivered for cfg.Settle. It returns false
// if ctx ended or cfg.DrainTimeout passed without progress first.
func (t *torture) drain(ctx context.Context, subs []*subscriber, exp *expectation, complete bool, ready func([]subscriberState) bool) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	lastProgress, lastChange := t.progress.Load(), time.Now()
	for {
		states := t.states(subs, exp)
		done := ready == nil || ready(states)
		var lastPublish time.Time
		for _, st := range states {
			if complete && (st.missing > 0 || st.awaiting > 0) {
				done = false
			}
			if st.lastPublish.After(lastPublish) {
				lastPublish = st.lastPublish
			}
		}
		if done && time.Since(lastPublish) >= t.cfg.Settle {
			return true
		}
		if p := t.progress.Load(); p != lastProgress {
			lastProgress, lastChange = p, time.Now()
		} else if lastPublish.After(lastChange) {
			lastChange = lastPublish
		}
		if time.Since(lastChange) > t.cfg.DrainTimeout {
			t.logf("drain: no progress for %v; giving up", t.cfg.DrainTimeout)
			return false
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
}

func (t *torture) states(subs []*subscriber, exp *expectation) []subscriberState {
	states := make([]subscriberState, len(subs))
	for i, s := range subs {
		if s.group != nil {
			states[i] = s.state(noExpectation)
		} else {
			states[i] = s.state(exp)
		}
	}
	if t.cfg.Shared > 0 && len(subs) > 0 {
		// What a member misses is what the group misses.
		missing, _ := groupTally(subs).missing(exp, 0)
		for i := range states {
			states[i].missing = missing
		}
	}
	return states
}

// expectationOf is what the publishers were promised: the messages acknowledged with a
// successful PUBREC. Call it once they have stopped.
func expectationOf(pubs []*publisher) *expectation {
	e := &expectation{refused: map[msgKey]byte{}}
	for _, p := range pubs {
		e.acked = append(e.acked, slices.Clone(p.acked))
		for k, code := range p.refused {
			e.refused[k] = code
		}
	}
	return e
}
