package session

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/topic"
)

// ErrInvalidMessage is given to PublishLocal's done for a message no client could have published:
// a topic name that is not valid, or a QoS above 2.
var ErrInvalidMessage = errors.New("session: invalid message")

// PublishLocal publishes m on behalf of the program that embeds the broker: there is no client
// session and no packet identifier. m is routed to every session with a matching subscription
// that may read it (No Local does not apply: no client published it) and, if m.Retain, becomes
// the retained message of its topic, all in one batch. m is the broker's from now on: m.Seq is
// assigned here, and so are m.Created and the expiry deadline (from the Message Expiry Interval)
// when they are zero.
//
// done, if not nil, runs once, on the journal's goroutine, after the batch is committed: with nil,
// and the deliveries go out after it; or with the error if the commit failed. If the journal had
// already failed, or m is not valid (ErrInvalidMessage), nothing is routed and done gets the
// error. done must not block; it may call the Broker.
func (b *Broker) PublishLocal(m *inflight.Message, done func(err error)) {
	if done == nil {
		done = func(error) {}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	refused := b.journal.Err()
	switch {
	case !topic.ValidName(m.Topic):
		refused = fmt.Errorf("%w: topic name %q", ErrInvalidMessage, m.Topic)
	case m.QoS > 2:
		refused = fmt.Errorf("%w: QoS %d", ErrInvalidMessage, m.QoS)
	}
	if refused != nil {
		// Answered from the journal's goroutine like every other outcome, never from here: the
		// caller may hold a lock that done takes.
		b.submit(nil, func(error) { done(refused) })
		return
	}
	now := b.now().UnixNano()
	if m.Created == 0 {
		m.Created = now
	}
	if m.ExpiresAt == 0 && m.Properties.MessageExpiryInterval > 0 {
		m.ExpiresAt = m.Created + int64(m.Properties.MessageExpiryInterval)*int64(time.Second)
	}
	if !b.retainFits(m) {
		b.submit(nil, func(error) { done(fmt.Errorf("%w: retained messages at their limit", ErrQueueFull)) })
		return
	}
	m.Seq = b.journal.NextSeq()
	batch := &inflight.Batch{}
	var out outbox
	if _, full := b.route(batch, m, "", m.QoS > 0 && b.opts.QueueFull == RefuseWhenFull, &out); full != nil {
		b.Metrics.QueueFullRefused.Add(1)
		if b.opts.OnRefuse != nil {
			b.opts.OnRefuse(full.ClientID, m.Topic)
		}
		err := fmt.Errorf("%w: session %q", ErrQueueFull, full.ClientID)
		b.submit(nil, func(error) { done(err) })
		return
	}
	b.retain(batch, m)
	b.submit(batch, func(err error) {
		if err != nil {
			b.log.Error("commit failed: local publish not stored", slog.String("topic", m.Topic), slog.Any("err", err))
			done(err)
			return
		}
		out.flush()
		done(nil)
	})
}
