package mqtt

import (
	"context"
	"fmt"
	"time"
)

// Publish publishes msg from the embedding program, as a client's PUBLISH would be: routed to every
// matching session and retained if msg.Retain. It returns once the message and its fan-out are
// committed to the store, which is the guarantee a PUBACK gives: after a nil return every session
// whose subscription matched gets it (exactly once at QoS 2, at least once at QoS 1), across
// crashes. QoS 0 is routed to the sessions online and stored nowhere.
//
// ErrQueueFull means nothing was published: a matching session's queue, or the retained messages,
// had no room (Options.QueueFull at its default); the caller may retry later without a duplicate.
// Any other error than these two leaves the outcome unknown: the message may or may not
// have been committed (ctx ended while the commit ran), so a caller that retries may deliver it
// twice.
func (s *Server) Publish(ctx context.Context, msg Message) error {
	if err := msg.validate(); err != nil {
		return err
	}
	if s.shuttingDown.Load() {
		return ErrServerClosed
	}
	eng, err := s.engine()
	if err != nil {
		return fmt.Errorf("publish to %s: %w", msg.Topic, err)
	}
	done := make(chan error, 1)
	eng.broker.PublishLocal(msg.message(time.Now().UnixNano()), func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("publish to %s: %w", msg.Topic, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("publish to %s: %w", msg.Topic, ctx.Err())
	}
}
