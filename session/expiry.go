package session

import (
	"log/slog"
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// scheduleExpiry arms the timer that ends an offline session. Caller holds b.mu.
func (b *Broker) scheduleExpiry(s *Session) {
	stopTimer(&s.expiry)
	if b.closed || s.expiryInterval == NeverExpire {
		return
	}
	deadline := s.disconnectedAt + int64(s.expiryInterval)*int64(time.Second)
	wait := time.Duration(deadline - b.now().UnixNano())
	s.expiry = time.AfterFunc(max(wait, 0), func() { b.expire(s) })
}

// expire ends s if it is still offline and still the registered session. It runs on the expiry
// timer's goroutine and takes b.mu.
func (b *Broker) expire(s *Session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.sessions[s.ClientID] != s || s.conn != nil {
		return
	}
	batch := &inflight.Batch{}
	var out outbox
	if s.will != nil {
		b.publishWill(batch, s, &out) // the session ends before the will delay [MQTT-3.1.3-9]
	}
	b.endSession(batch, s)
	b.Metrics.SessionsExpired.Add(1)
	b.log.Info("session expired", slog.String("client", s.ClientID))
	b.submit(batch, func(err error) {
		if err == nil {
			out.flush()
		}
	})
}

// SessionExpiry is the session's current Session Expiry Interval.
func (b *Broker) SessionExpiry(s *Session) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.expiryInterval
}
