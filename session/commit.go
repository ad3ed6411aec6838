package session

import (
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// submit hands a batch to the journal; done runs after it is committed. Caller holds b.mu, which
// keeps the journal order equal to the in-memory order.
func (b *Broker) submit(batch *inflight.Batch, done func(err error)) {
	b.journal.Submit(batch, func(err error) {
		if err != nil {
			b.Metrics.CommitFailures.Add(1)
		}
		if done != nil {
			done(err)
		}
	})
	b.kickShared()
}

// submitSends commits batch and then sends out. Caller holds b.mu.
func (b *Broker) submitSends(batch *inflight.Batch, s *Session, c Conn, out outbox) {
	if batch.Len() == 0 && len(out) == 0 {
		return
	}
	b.submit(batch, func(err error) {
		if err != nil {
			c.Close(reason.UnspecifiedError)
			return
		}
		out.flush()
	})
}
