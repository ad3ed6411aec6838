package session

import (
	"log/slog"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/topic"
)

// PublishVolatile publishes msgs as retained QoS 0 messages that live in memory only: each
// replaces the volatile retained message of its topic, goes at once to every connected session
// whose subscription matches and that may read it (Options.MayRead), and is sent to a new
// subscriber as a retained message [MQTT-3.3.1-9]. Nothing about them is ever given to the
// journal: they cost no commit and no sync, and a restart forgets them. The broker's $SYS topics
// are published this way.
//
// Each message's QoS is forced to 0 and its retain flag set. QoS 0 is what keeps them out of the
// journal: a QoS 0 delivery goes only to a connected session and is never queued or recorded in
// flight (deliver), so routing one changes nothing durable. The caller owns the topic space it
// publishes here: a topic must not also receive durable messages (the mqtt package refuses client
// PUBLISHes and Wills to $SYS).
func (b *Broker) PublishVolatile(msgs []*inflight.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.volatile == nil {
		b.volatile = make(map[string]*inflight.Message)
	}
	var out outbox
	scratch := &inflight.Batch{} // stays empty: QoS 0 writes nothing
	for _, m := range msgs {
		m.QoS, m.Retain = 0, true
		b.volatile[m.Topic] = m
		b.route(scratch, m, "", false, &out) // QoS 0 is never refused
	}
	if b.keptOutOfJournal(scratch) {
		// Sent now, under b.mu, as an uncommitted QoS 0 publish is (accept): it promises
		// nothing, so it waits for no commit.
		out.flush()
	}
}

// keptOutOfJournal reports whether scratch, the batch a volatile delivery was routed with, stayed
// empty. It always should; if a change to deliver ever breaks that, the deliveries are not sent
// rather than sent with records nobody commits. Caller holds b.mu.
func (b *Broker) keptOutOfJournal(scratch *inflight.Batch) bool {
	if scratch.Len() == 0 {
		return true
	}
	b.log.Error("volatile message produced journal records: not sent", slog.String("records", scratch.String()))
	return false
}

// deliverVolatile sends s the volatile retained messages matching filter that it may read, at
// QoS 0 with the retain flag set. Caller holds b.mu.
func (b *Broker) deliverVolatile(s *Session, filter string, subIDs []int, out *outbox) {
	var mine outbox
	scratch := &inflight.Batch{}
	for name, m := range b.volatile {
		if !topic.Match(filter, name) || !b.mayRead(s, name) {
			continue
		}
		b.deliver(scratch, s, m, 0, subIDs, true, &mine)
	}
	if b.keptOutOfJournal(scratch) {
		out.addAll(&mine)
	}
}
