package mqtt

import (
	"log/slog"
	"time"

	"github.com/oncemq/oncemq/session"
)

// reportInterval is how often the broker logs what it dropped on purpose, when anything changed.
const reportInterval = time.Minute

// dropCounts is a snapshot of session.Metrics.
type dropCounts struct {
	queueOverflow, expired, tooLarge, sessionsExpired, commitFailures uint64
}

func snapshot(m *session.Metrics) dropCounts {
	return dropCounts{m.QueueOverflow.Load(), m.Expired.Load(), m.TooLarge.Load(), m.SessionsExpired.Load(), m.CommitFailures.Load()}
}

// logDrops writes the totals of every deliberate drop: no drop is silent, and an operator sees the
// totals without reading every warning.
func logDrops(log *slog.Logger, c dropCounts) {
	log.Info("drops since start",
		slog.Uint64("queue_overflow", c.queueOverflow), slog.Uint64("message_expired", c.expired),
		slog.Uint64("too_large_for_client", c.tooLarge), slog.Uint64("sessions_expired", c.sessionsExpired),
		slog.Uint64("commit_failures", c.commitFailures))
}

// reportLoop logs the drop totals every reportInterval in which they changed, and once more when
// done is closed if they ever changed.
func reportLoop(log *slog.Logger, m *session.Metrics, done <-chan struct{}) {
	last := dropCounts{}
	ticker := time.NewTicker(reportInterval)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			if now := snapshot(m); now != (dropCounts{}) {
				logDrops(log, now)
			}
			return
		case <-ticker.C:
			if now := snapshot(m); now != last {
				logDrops(log, now)
				last = now
			}
		}
	}
}
