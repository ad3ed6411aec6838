package mqtt

import (
	"time"
)

// reportInterval is how often the broker logs what it dropped on purpose, when anything changed.
const reportInterval = time.Minute

// dropReport is the summary of every deliberate drop since start: no drop is silent, and an
// operator sees the totals without one line per dropped message.
func (s *Server) dropReport() *summaryLog {
	m := &s.metrics
	return &summaryLog{log: s.log, msg: "drops since start", interval: reportInterval, counters: []summaryCounter{
		{"queue_overflow", m.QueueOverflow.Load},
		{"message_expired", m.Expired.Load},
		{"too_large_for_client", m.TooLarge.Load},
		{"qos0_connection_overflow", s.traffic.qos0Overflow.Load},
		{"sessions_expired", m.SessionsExpired.Load},
		{"commit_failures", m.CommitFailures.Load},
	}}
}
