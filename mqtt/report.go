package mqtt

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncemq/oncemq/session"
)

// reportInterval is how often the broker logs what it dropped or refused on purpose, when anything
// changed: one line per interval at most, however many drops, never one line per drop.
const reportInterval = 10 * time.Second

// maxNamedSessions bounds the full sessions one report line names.
const maxNamedSessions = 5

// dropCounts is a snapshot of the drop and refusal counters.
type dropCounts struct {
	queueOverflow, expired, tooLarge, sessionsExpired, commitFailures uint64
	queueRefused, retainedFull, qos0WriteQueue                        uint64
	sharedNoMember, sharedMemberGone                                  uint64
}

// reporter is the broker's one summary logger for deliberate drops and refusals. The session
// layer tells it which session's full queue refused a publish (refused, under the broker's lock);
// loop writes the totals and the sessions named since the last line.
type reporter struct {
	log     *slog.Logger
	metrics *session.Metrics
	qos0    *atomic.Uint64 // QoS 0 PUBLISHes dropped at a full write queue

	mu       sync.Mutex
	fullSess map[string]uint64 // refusals per full session since the last line, at most maxTracked
}

// maxTracked bounds the sessions a reporter remembers between two lines.
const maxTracked = 1000

// refused notes a publish refused because the queue of clientID ("" for the retained messages)
// was full. It is session.Options.OnRefuse: called under the broker's lock, it only counts.
func (r *reporter) refused(clientID, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fullSess == nil {
		r.fullSess = make(map[string]uint64)
	}
	if _, ok := r.fullSess[clientID]; ok || len(r.fullSess) < maxTracked {
		r.fullSess[clientID]++
	}
}

func (r *reporter) snapshot() dropCounts {
	m := r.metrics
	return dropCounts{m.QueueOverflow.Load(), m.Expired.Load(), m.TooLarge.Load(), m.SessionsExpired.Load(),
		m.CommitFailures.Load(), m.QueueFullRefused.Load(), m.RetainedFull.Load(), r.qos0.Load(),
		m.SharedNoMember.Load(), m.SharedMemberGone.Load()}
}

// takeFull returns the sessions that refused publishes since the last call, most refusals first.
func (r *reporter) takeFull() []string {
	r.mu.Lock()
	counts := r.fullSess
	r.fullSess = nil
	r.mu.Unlock()
	names := slices.Collect(maps.Keys(counts))
	slices.SortFunc(names, func(a, b string) int { return int(counts[b]) - int(counts[a]) })
	return names[:min(len(names), maxNamedSessions)]
}

// write logs the totals of every deliberate drop and refusal, and the full sessions that refused
// publishes since the last line: no drop is silent, and an operator sees who holds publishers back.
func (r *reporter) write(c dropCounts) {
	attrs := []any{
		slog.Uint64("queue_overflow", c.queueOverflow), slog.Uint64("refused_queue_full", c.queueRefused),
		slog.Uint64("message_expired", c.expired), slog.Uint64("too_large_for_client", c.tooLarge),
		slog.Uint64("qos0_write_queue_full", c.qos0WriteQueue), slog.Uint64("not_retained_limit", c.retainedFull),
		slog.Uint64("sessions_expired", c.sessionsExpired), slog.Uint64("commit_failures", c.commitFailures),
		slog.Uint64("shared_no_member", c.sharedNoMember), slog.Uint64("shared_member_gone", c.sharedMemberGone),
	}
	if full := r.takeFull(); len(full) > 0 {
		attrs = append(attrs, slog.Any("full_sessions", full))
	}
	r.log.Info("drops and refusals since start", attrs...)
}

// loop logs the totals every reportInterval in which they changed, and once more when done is
// closed if they ever changed.
func (r *reporter) loop(done <-chan struct{}) {
	last := dropCounts{}
	ticker := time.NewTicker(reportInterval)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			if now := r.snapshot(); now != (dropCounts{}) {
				r.write(now)
			}
			return
		case <-ticker.C:
			if now := r.snapshot(); now != last {
				r.write(now)
				last = now
			}
		}
	}
}
