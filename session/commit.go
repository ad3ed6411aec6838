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

// submitCounted is submit for a done that counts its own failure (b.failed): the paths every
// message takes use it, since the wrapper submit adds is an allocation per commit.
func (b *Broker) submitCounted(batch *inflight.Batch, done func(err error)) {
	b.journal.Submit(batch, done)
	b.kickShared()
}

// failed counts a failed commit and reports whether err is one.
func (b *Broker) failed(err error) bool {
	if err != nil {
		b.Metrics.CommitFailures.Add(1)
		return true
	}
	return false
}

// submitSends commits batch and then sends out. Caller holds b.mu.
func (b *Broker) submitSends(batch *inflight.Batch, s *Session, c Conn, out outbox) {
	if batch.Len() == 0 && out.n == 0 {
		return
	}
	b.submitCounted(batch, func(err error) {
		if b.failed(err) {
			c.Close(reason.UnspecifiedError)
			return
		}
		out.flush()
	})
}
