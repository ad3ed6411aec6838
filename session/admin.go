package session

import (
	"slices"
	"strings"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// Info is what an operator sees of one session: its identity, its subscriptions and what it holds
// in flight, copied under the lock.
type Info struct {
	ClientID       string
	Username       string // "" after a restart until the client connects again (not stored)
	Online         bool
	ExpiryInterval uint32 // seconds; NeverExpire for never
	DisconnectedAt int64  // unix nanoseconds; 0 while online
	Subscriptions  []inflight.SubscriptionRecord
	Inbound        []uint16                  // QoS 2 ids from the client awaiting PUBREL, in id order
	Outbound       []inflight.OutboundRecord // deliveries to the client awaiting acks, in order
	Queued         int                       // messages waiting
	QueuedBytes    int                       // their payloads
}

// Sessions lists every session, in client id order. It copies each one under the lock: call it for
// an operator's request, not per message.
func (b *Broker) Sessions() []Info {
	b.mu.Lock()
	defer b.mu.Unlock()
	infos := make([]Info, 0, len(b.sessions))
	for _, s := range b.sessions {
		infos = append(infos, s.info())
	}
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.ClientID, b.ClientID) })
	return infos
}

// SessionInfo is the session of clientID; false if there is none.
func (b *Broker) SessionInfo(clientID string) (Info, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.sessions[clientID]
	if !ok {
		return Info{}, false
	}
	return s.info(), true
}

// info copies what s holds. Caller holds Broker.mu.
func (s *Session) info() Info {
	in := Info{ClientID: s.ClientID, Username: s.Username, Online: s.connected(), ExpiryInterval: s.expiryInterval,
		DisconnectedAt: s.disconnectedAt, Queued: len(s.queue)}
	for _, sub := range s.subs {
		in.Subscriptions = append(in.Subscriptions, sub)
	}
	slices.SortFunc(in.Subscriptions, func(a, b inflight.SubscriptionRecord) int { return strings.Compare(a.Filter, b.Filter) })
	for _, r := range s.inbound.Records() {
		in.Inbound = append(in.Inbound, r.PacketID)
	}
	for _, e := range s.outbound.InOrder() {
		in.Outbound = append(in.Outbound, e.OutboundRecord)
	}
	for _, q := range s.queue {
		in.QueuedBytes += int(q.msg.Payload)
	}
	return in
}

// Delete ends the session of clientID on an operator's request: its connection, if any, is closed
// (5.0: DISCONNECT 0x98, Administrative action), its will is published as for any connection that
// ends without DISCONNECT, and the session is removed with everything it holds, in one batch
// committed like any other change. The client's next CONNECT gets Session Present 0. done runs
// once the removal is committed (nil) or could not be; Delete reports false, and does not call
// done, when there is no such session.
func (b *Broker) Delete(clientID string, done func(error)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.sessions[clientID]
	if !ok {
		return false
	}
	batch := &inflight.Batch{}
	var out outbox
	if c := s.conn; c != nil {
		s.conn = nil // the connection's own end finds the session taken and changes nothing
		c.Close(reason.AdministrativeAction)
	}
	if s.will != nil {
		b.publishWill(batch, s, &out)
	}
	b.endSession(batch, s)
	b.submit(batch, func(err error) {
		if err == nil {
			out.flush()
		}
		done(err)
	})
	return true
}
