package session

import (
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// Disconnected tells the broker that c, which held s, is gone. publishWill is true for an abnormal
// end or DISCONNECT 0x04; a normal DISCONNECT deletes the will [MQTT-3.1.2-10]. newExpiry, if not
// nil, is the Session Expiry Interval the client set in its DISCONNECT.
func (b *Broker) Disconnected(s *Session, c Conn, publishWill bool, newExpiry *uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.conn != c {
		return // taken over: the new owner decided the will
	}
	batch := &inflight.Batch{}
	var out outbox
	s.conn = nil
	s.disconnectedAt = b.now().UnixNano()
	if newExpiry != nil && *newExpiry != s.expiryInterval {
		wasDurable := s.durable()
		s.expiryInterval = *newExpiry
		if wasDurable && !s.durable() {
			b.forget(batch, s)
		}
	}
	if !publishWill {
		s.will = nil
	}
	if s.will != nil {
		if s.will.Delay == 0 || !s.durable() {
			b.publishWill(batch, s, &out)
		} else {
			b.scheduleWill(s, time.Duration(s.will.Delay)*time.Second)
		}
	}
	if !s.durable() {
		b.endSession(batch, s)
	} else {
		batch.PutSession(s.record())
		b.scheduleExpiry(s)
		s.unpin() // offline: the bodies wait in the file
	}
	b.submit(batch, func(err error) {
		if err == nil {
			out.flush()
		}
	})
}
