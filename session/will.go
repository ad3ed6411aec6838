package session

import (
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// scheduleWill publishes s's will after delay unless the session is resumed first. Caller holds b.mu.
func (b *Broker) scheduleWill(s *Session, delay time.Duration) {
	stopTimer(&s.willTimer)
	if b.closed {
		return
	}
	w := s.will
	s.willTimer = time.AfterFunc(max(delay, 0), func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed || b.sessions[s.ClientID] != s || s.conn != nil || s.will != w {
			return
		}
		s.willTimer = nil
		batch := &inflight.Batch{}
		var out outbox
		b.publishWill(batch, s, &out)
		b.submit(batch, func(err error) {
			if err == nil {
				out.flush()
			}
		})
	})
}

// publishWill routes s's will as a new message and clears it. Caller holds b.mu.
func (b *Broker) publishWill(batch *inflight.Batch, s *Session, out *outbox) {
	w := s.will
	s.will = nil
	stopTimer(&s.willTimer)
	if w == nil || w.Message == nil {
		return
	}
	now := b.now().UnixNano()
	msg := w.Message.Clone()
	msg.Seq = b.journal.NextSeq()
	msg.Created = now
	msg.ExpiresAt = 0
	if msg.Properties.MessageExpiryInterval > 0 {
		msg.ExpiresAt = now + int64(msg.Properties.MessageExpiryInterval)*int64(time.Second)
	}
	b.route(batch, msg, s.ClientID, false, out) // a will is never refused: drops are counted
	b.retain(batch, msg)
	if s.durable() && b.sessions[s.ClientID] == s {
		batch.PutSession(s.record())
	}
}
