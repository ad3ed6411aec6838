package session

import (
	"log/slog"

	"github.com/oncemq/oncemq/inflight"
)

// body returns the body of a queued or in-flight message about to be sent: pinned, the one the
// entry holds, or the journal's, from its cache or read from the file. The read happens here,
// under b.mu: the file is a memory map and a read is a B+tree lookup there, which
// docs/ARCHITECTURE.md "Message bodies" measures; reading outside the lock would let the entry
// change meanwhile.
//
// A body that cannot be read (an I/O error, damage) cannot be delivered by anyone: it is logged
// with what was lost, counted (Unreadable) and nil is returned; the caller drops the entry as if
// it had been delivered, and the broker goes on with the other messages. Caller holds b.mu.
func (b *Broker) body(s *Session, pinned *inflight.Message, m *inflight.Handle) *inflight.Message {
	if pinned != nil {
		return pinned
	}
	return b.loadBody(s.ClientID, m)
}

// loadBody reads the body of m from the journal for clientID (a session's client id, or a shared
// subscription group's filter); see body. Caller holds b.mu.
func (b *Broker) loadBody(clientID string, m *inflight.Handle) *inflight.Message {
	body, err := b.journal.LoadMessage(m.Seq)
	if err != nil {
		b.log.Error("message body unreadable: dropped", slog.String("client", clientID),
			slog.Uint64("seq", m.Seq), slog.Any("error", err))
		b.dropped(clientID, "", Unreadable)
		return nil
	}
	return body
}

// topicOf is the topic of q's message, for OnDrop when it is dropped: the body is read for it if it
// is in the file (a drop is rare, and it is read as it would have been to be sent), and "" if it
// cannot be. Caller holds b.mu.
func (b *Broker) topicOf(q *queued) string {
	if q.body != nil {
		return q.body.Topic
	}
	if m, err := b.journal.LoadMessage(q.msg.Seq); err == nil {
		return m.Topic
	}
	return ""
}

// pinAll reads into memory the bodies of every message s holds, before s stops being durable: from
// then on nothing keeps them in the file. An entry whose body cannot be read is dropped (body),
// its durable reference released while s still counts as durable; its record goes with the
// session's (forget, which follows, deletes them all). Caller holds b.mu.
func (b *Broker) pinAll(batch *inflight.Batch, s *Session) {
	unref := func(m *inflight.Handle) {
		if m.Unref() {
			batch.DeleteMessage(m.Seq)
		}
	}
	kept := s.queue[:0]
	for _, q := range s.queue {
		if q.body = b.body(s, q.body, q.msg); q.body == nil {
			s.unhold(q.msg)
			unref(q.msg)
			continue
		}
		kept = append(kept, q)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	for _, e := range s.outbound.InOrder() {
		if e.Msg == nil {
			continue
		}
		if e.Body = b.body(s, e.Body, e.Msg); e.Body == nil {
			s.outbound.Remove(e.PacketID)
			delete(s.unsent, e.PacketID) // pinAll runs before resume counts the slots
			s.unhold(e.Msg)
			unref(e.Msg)
		}
	}
}
