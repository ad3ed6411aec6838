package session

import (
	"strings"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/topic"
)

// Shared subscriptions, "$share/{group}/{filter}" (§4.8.2): each message that matches a group
// goes to one member of it. The group owns a durable queue of message references (bucket shared,
// inflight.SharedRecord); a member takes the next message only when it can send it at once
// (connected, its resends done, its in-flight count below its Receive Maximum, room in its write
// queue), and the move from the group queue to the member's outbound table is one batch. So no
// message is ever assigned to a member without being sent to it, and nothing waits behind a slow
// member. The group's record of a message stays, naming the member and its packet id, until that
// member completes or refuses the message: a member whose session lives in memory only (Session
// Expiry 0, 3.1.1 CleanSession 1) holds nothing durable, and the record is what lets recovery
// give a QoS 1 message to another member after a crash. See docs/ARCHITECTURE.md "Shared
// subscriptions".

// group is one shared subscription group. Guarded by Broker.mu.
type group struct {
	key          string // the whole filter, "$share/{name}/{filter}"
	name, filter string
	members      []string                               // client ids, in join order: the round robin
	subs         map[string]inflight.SubscriptionRecord // each member's subscription options
	next         int                                    // round-robin cursor into members
	waiting      []*sharedMsg                           // sent to no member yet, by order
	order        uint64                                 // last order handed out
	heldBytes    int64                                  // bodies of the waiting messages, in memory or in the file
}

// sharedMsg is one QoS 1 or 2 message of a group: waiting (member "") or sent to a member. Like a
// session's queue entry it holds the message's index entry, and its body only while the message is
// being routed (a live message); a waiting message's body is in the file (or in a batch, the cache,
// the log), read when it is sent (sharedBody).
type sharedMsg struct {
	g        *group
	order    uint64
	msg      *inflight.Handle
	body     *inflight.Message // nil: read when sent
	member   string
	packetID uint16
	qos      byte
}

// sharedState is the broker's shared subscription groups. Guarded by Broker.mu.
type sharedState struct {
	groups   map[string]*group                // by key
	index    *topic.Index[*group]             // by the filter after the share name; "client id" is the key
	memberOf map[string][]*group              // client id -> the groups it is a member of
	sent     map[string]map[uint16]*sharedMsg // member -> its packet id -> the group message it carries
	kick     map[*group]bool                  // groups whose waiting messages may have a member now (kickShared)
}

func (st *sharedState) init() {
	if st.groups == nil {
		st.groups = make(map[string]*group)
		st.index = topic.NewIndex[*group]()
		st.memberOf = make(map[string][]*group)
		st.sent = make(map[string]map[uint16]*sharedMsg)
		st.kick = make(map[*group]bool)
	}
}

// splitShared splits a valid shared filter into its share name and the filter after it.
func splitShared(f string) (name, filter string) {
	rest := strings.TrimPrefix(f, "$share/")
	i := strings.IndexByte(rest, '/')
	return rest[:i], rest[i+1:]
}

// record is the durable form of sm.
func (sm *sharedMsg) record() inflight.SharedRecord {
	return inflight.SharedRecord{Group: sm.g.name, Filter: sm.g.filter, Order: sm.order, MsgSeq: sm.msg.Seq,
		Member: sm.member, PacketID: sm.packetID, QoS: sm.qos}
}

// indexSub makes sub of s findable by routing: the topic index, or its group. Caller holds b.mu.
func (b *Broker) indexSub(s *Session, sub inflight.SubscriptionRecord) {
	if !topic.IsShared(sub.Filter) {
		b.subs.Add(sub.Filter, s.ClientID, sub)
		return
	}
	b.shared.init()
	g := b.shared.groups[sub.Filter]
	if g == nil {
		g = &group{key: sub.Filter, subs: make(map[string]inflight.SubscriptionRecord)}
		g.name, g.filter = splitShared(sub.Filter)
		b.shared.groups[g.key] = g
		b.shared.index.Add(g.filter, g.key, g)
	}
	if _, ok := g.subs[s.ClientID]; !ok {
		g.members = append(g.members, s.ClientID)
		b.shared.memberOf[s.ClientID] = append(b.shared.memberOf[s.ClientID], g)
	}
	g.subs[s.ClientID] = sub
	b.shared.kick[g] = true
}

// unindexSub undoes indexSub. A group left with no member is deleted with its queue: its waiting
// messages are dropped and counted. Caller holds b.mu.
func (b *Broker) unindexSub(batch *inflight.Batch, s *Session, f string) {
	if !topic.IsShared(f) {
		b.subs.Remove(f, s.ClientID)
		return
	}
	g := b.shared.groups[f]
	if g == nil || !hasMember(g, s.ClientID) {
		return
	}
	delete(g.subs, s.ClientID)
	g.members = removeString(g.members, s.ClientID)
	b.shared.memberOf[s.ClientID] = removeGroup(b.shared.memberOf[s.ClientID], g)
	if len(b.shared.memberOf[s.ClientID]) == 0 {
		delete(b.shared.memberOf, s.ClientID)
	}
	if len(g.members) == 0 {
		b.dropGroup(batch, g)
	}
}

func hasMember(g *group, clientID string) bool {
	_, ok := g.subs[clientID]
	return ok
}

func removeString(xs []string, x string) []string {
	for i := range xs {
		if xs[i] == x {
			return append(xs[:i], xs[i+1:]...)
		}
	}
	return xs
}

func removeGroup(gs []*group, g *group) []*group {
	for i := range gs {
		if gs[i] == g {
			return append(gs[:i], gs[i+1:]...)
		}
	}
	return gs
}

// dropGroup deletes a group that has no member left: its waiting messages are dropped and counted
// (SharedNoMember); the records of messages in flight to former members go too, and those members
// complete them as usual. Caller holds b.mu.
func (b *Broker) dropGroup(batch *inflight.Batch, g *group) {
	for _, sm := range g.waiting {
		b.dropped(g.key, b.sharedTopic(sm), SharedNoMember)
		b.forgetShared(batch, sm)
	}
	g.waiting = nil
	for member, ids := range b.shared.sent {
		for id, sm := range ids {
			if sm.g == g {
				delete(ids, id)
				b.forgetShared(batch, sm)
			}
		}
		if len(ids) == 0 {
			delete(b.shared.sent, member)
		}
	}
	delete(b.shared.groups, g.key)
	delete(b.shared.kick, g)
	b.shared.index.Remove(g.filter, g.key)
}

// forgetShared deletes sm's record and drops the group's reference to its message. Caller holds
// b.mu.
func (b *Broker) forgetShared(batch *inflight.Batch, sm *sharedMsg) {
	batch.DeleteShared(sm.g.name, sm.g.filter, sm.order)
	if sm.msg.Unref() {
		batch.DeleteMessage(sm.msg.Seq)
	}
}

// sharedBody returns the body of sm, about to be sent: the one it holds, or the journal's. One that
// cannot be read is logged, counted (Unreadable) and forgotten by the group, and nil is returned.
// Caller holds b.mu.
func (b *Broker) sharedBody(batch *inflight.Batch, sm *sharedMsg) *inflight.Message {
	if sm.body != nil {
		return sm.body
	}
	body := b.loadBody(sm.g.key, sm.msg)
	if body == nil && sm.order != 0 {
		b.forgetShared(batch, sm)
	}
	return body
}

// sharedTopic is the topic of sm's message, for OnDrop: see topicOf. Caller holds b.mu.
func (b *Broker) sharedTopic(sm *sharedMsg) string {
	if sm.body != nil {
		return sm.body.Topic
	}
	if m, err := b.journal.LoadMessage(sm.msg.Seq); err == nil {
		return m.Topic
	}
	return ""
}

// sharedMatches is the groups whose filter matches topic name. Caller holds b.mu.
func (b *Broker) sharedMatches(name string) []*group {
	if len(b.shared.groups) == 0 {
		return nil
	}
	var gs []*group
	b.shared.index.Match(name, func(_, _ string, g *group) { gs = append(gs, g) })
	return gs
}

// groupHasRoom reports whether g's queue can take m within the limits of a session queue
// (Options.MaxQueued, MaxQueuedBytes). Caller holds b.mu.
func (b *Broker) groupHasRoom(g *group, m *inflight.Message) bool {
	if len(g.waiting) >= b.opts.MaxQueued {
		return false
	}
	return g.heldBytes == 0 || g.heldBytes+m.Handle().Size() <= b.opts.MaxQueuedBytes
}

// sharedFull returns a stand-in session named after the first group in gs whose queue cannot take
// m, for route's refusal (RefuseWhenFull), or nil. Caller holds b.mu.
func (b *Broker) sharedFull(gs []*group, m *inflight.Message) *Session {
	for _, g := range gs {
		if len(g.waiting) > 0 && !b.groupHasRoom(g, m) {
			return &Session{ClientID: g.key}
		}
	}
	return nil
}

// routeShared gives m to each group in gs: sent to one member at once if one can take it, else
// kept in the group queue (QoS 1 and 2) or dropped and counted (QoS 0, no member online). It
// reports how many groups took it. Caller holds b.mu.
func (b *Broker) routeShared(batch *inflight.Batch, gs []*group, m *inflight.Message, out *outbox) int {
	now := b.now().UnixNano()
	given := 0
	for _, g := range gs {
		if m.Expired(now) { // [MQTT-3.3.2-5]
			b.dropped(g.key, m.Topic, Expired)
			continue
		}
		given++
		if m.QoS == 0 {
			if s := b.pickMember(g, m.Topic, nil, true); s != nil {
				b.sendShared(batch, g, &sharedMsg{g: g, msg: m.Handle(), body: m}, s, now, out)
			} else {
				b.dropped(g.key, m.Topic, SharedNoMember)
			}
			continue
		}
		if !b.groupHasRoom(g, m) && !b.makeGroupRoom(batch, g, m) {
			b.dropped(g.key, m.Topic, QueueFull)
			continue
		}
		g.order++
		sm := &sharedMsg{g: g, order: g.order, msg: m.Handle(), body: m}
		if m.Ref() {
			batch.PutMessage(m) // the batch keeps the body until its commit (LoadMessage finds it)
		}
		if len(g.waiting) == 0 && b.offer(batch, g, sm, m, now, out, make(map[string]bool)) {
			continue
		}
		sm.body = nil // waiting: the body is in the file, read when it is sent
		g.waiting = append(g.waiting, sm)
		g.heldBytes += sm.msg.Size()
		batch.PutShared(sm.record())
	}
	return given
}

// makeGroupRoom drops g's oldest waiting messages until m fits (DropOldest), and reports whether
// it does. Caller holds b.mu.
func (b *Broker) makeGroupRoom(batch *inflight.Batch, g *group, m *inflight.Message) bool {
	if b.opts.QueueFull != DropOldest {
		return false
	}
	for len(g.waiting) > 0 && !b.groupHasRoom(g, m) {
		sm := b.popWaiting(g)
		b.dropped(g.key, b.sharedTopic(sm), QueueFull)
		b.forgetShared(batch, sm)
	}
	return b.groupHasRoom(g, m)
}

// popWaiting removes the head of g's queue. Caller holds b.mu.
func (b *Broker) popWaiting(g *group) *sharedMsg {
	sm := g.waiting[0]
	g.waiting[0] = nil
	g.waiting = g.waiting[1:]
	g.heldBytes -= sm.msg.Size()
	return sm
}

// canSend reports whether member s can be sent a message at once: connected, its resends done,
// below its Receive Maximum. Caller holds b.mu.
func canSend(s *Session) bool {
	return s != nil && s.connected() && len(s.unsent) == 0 && s.sent < s.receiveMax
}

// canTake reports whether member s can be sent a message on topic at once: canSend, and allowed
// to read the topic. Caller holds b.mu.
func (b *Broker) canTake(s *Session, topic string) bool {
	return canSend(s) && b.mayRead(s, topic)
}

// pickMember returns the next member of g, round robin, that can take a message on topic at once,
// skipping those in skip; nil if none. A QoS 0 message (qos0) needs no send quota: any connected
// member that may read it takes it. Caller holds b.mu.
func (b *Broker) pickMember(g *group, topic string, skip map[string]bool, qos0 bool) *Session {
	for range len(g.members) {
		g.next = (g.next + 1) % len(g.members)
		id := g.members[g.next]
		if skip[id] {
			continue
		}
		s := b.sessions[id]
		if qos0 && s != nil && s.connected() && b.mayRead(s, topic) || !qos0 && b.canTake(s, topic) {
			return s
		}
	}
	return nil
}

// sendShared sends sm, whose body is body, to member s at min(message QoS, the member's
// subscription QoS) and records which member holds it; sm is not in g.waiting. At QoS 0 the group
// is done with it at once. It returns noRoom, with nothing changed, when s's write queue is full.
// Caller holds b.mu.
func (b *Broker) sendShared(batch *inflight.Batch, g *group, sm *sharedMsg, s *Session, now int64, out *outbox) sendResult {
	body := sm.body
	sub := g.subs[s.ClientID]
	qos := min(body.QoS, sub.QoS) // [MQTT-3.8.4-8]
	var subIDs []int
	if sub.Identifier > 0 {
		subIDs = []int{sub.Identifier}
	}
	retain := sub.RetainAsPublished && body.Retain
	if qos == 0 {
		pk := publishPacket(body, 0, 0, false, retain, subIDs, now)
		if b.checkSize(s, pk) {
			out.add(s.conn, pk)
		}
		if sm.order != 0 {
			b.forgetShared(batch, sm)
		}
		return sent
	}
	q := &queued{order: s.nextOrder(), qos: qos, msg: sm.msg, body: body, subIDs: subIDs, retain: retain}
	s.hold(sm.msg)
	switch b.send(batch, s, q, now, out) {
	case noRoom:
		s.unhold(sm.msg)
		return noRoom
	case discarded: // too large for this member: dropped as if delivered, counted by checkSize
		s.unhold(sm.msg)
		b.forgetShared(batch, sm)
		return discarded
	}
	sm.body = nil // the member's outbound entry holds it while it needs it
	// send queued the PUBLISH last in out; its packet id is the member's outbound id.
	sm.member, sm.packetID, sm.qos = s.ClientID, out.last().ID, qos
	ids := b.shared.sent[s.ClientID]
	if ids == nil {
		ids = make(map[uint16]*sharedMsg)
		b.shared.sent[s.ClientID] = ids
	}
	ids[sm.packetID] = sm
	batch.PutShared(sm.record())
	return sent
}

// offer sends sm, whose body is body, to the next member that can take it at once, and reports
// whether one did (or the message was discarded as too large for it). Members whose write queue
// turns it away are added to full and not asked again. Caller holds b.mu.
func (b *Broker) offer(batch *inflight.Batch, g *group, sm *sharedMsg, body *inflight.Message, now int64, out *outbox, full map[string]bool) bool {
	for {
		s := b.pickMember(g, body.Topic, full, false)
		if s == nil {
			return false
		}
		sm.body = body
		res := b.sendShared(batch, g, sm, s, now, out)
		if res != noRoom {
			return true
		}
		sm.body = nil
		full[s.ClientID] = true
	}
}

// dispatch sends g's waiting messages, in order, to members that can take them at once, until
// none can. Expired messages are dropped on the way. Caller holds b.mu.
func (b *Broker) dispatch(batch *inflight.Batch, g *group, out *outbox) {
	now := b.now().UnixNano()
	full := make(map[string]bool) // members whose write queue is full
	for len(g.waiting) > 0 {
		sm := g.waiting[0]
		if sm.msg.Expired(now) { // [MQTT-3.3.2-5]
			b.popWaiting(g)
			b.dropped(g.key, b.sharedTopic(sm), Expired)
			b.forgetShared(batch, sm)
			continue
		}
		if !b.anyCanSend(g, full) {
			return // no body read for a message no member can take now
		}
		body := b.sharedBody(batch, sm)
		if body == nil { // unreadable: dropped, counted and forgotten (sharedBody)
			b.popWaiting(g)
			continue
		}
		if !b.offer(batch, g, sm, body, now, out, full) {
			return
		}
		b.popWaiting(g)
	}
}

// anyCanSend reports whether a member of g not in skip can be sent a message at once, its
// permission to read the topic aside. Caller holds b.mu.
func (b *Broker) anyCanSend(g *group, skip map[string]bool) bool {
	for _, id := range g.members {
		if !skip[id] && canSend(b.sessions[id]) {
			return true
		}
	}
	return false
}

// fillShared gives s, whose send quota has room, the waiting messages of its groups. It is the end
// of fill: a member's own queue goes first. Caller holds b.mu.
func (b *Broker) fillShared(batch *inflight.Batch, s *Session, out *outbox) {
	for _, g := range b.shared.memberOf[s.ClientID] {
		if len(g.waiting) > 0 && canSend(s) {
			b.dispatch(batch, g, out)
		}
	}
}

// sharedAcked is told that the outbound id of s is done with its message: completed (PUBACK, PUBREC
// below 0x80) or refused (PUBACK or PUBREC from 0x80, which discards it for the whole group
// [MQTT-4.8.2-6]). If it carried a group message, the group forgets it. Caller holds b.mu.
func (b *Broker) sharedAcked(batch *inflight.Batch, s *Session, id uint16) {
	ids := b.shared.sent[s.ClientID]
	sm := ids[id]
	if sm == nil {
		return
	}
	delete(ids, id)
	if len(ids) == 0 {
		delete(b.shared.sent, s.ClientID)
	}
	b.forgetShared(batch, sm)
}

// memberGone is told that the session s ends. A QoS 1 group message in flight to it goes back to
// its group queue, in its place (at least once); a QoS 2 one is dropped and counted, never sent to
// another member [MQTT-4.8.2-5]; one it already acknowledged (PUBREL sent) was delivered. The
// groups with a message back are dispatched after the batch (kickShared). Caller holds b.mu.
func (b *Broker) memberGone(batch *inflight.Batch, s *Session) {
	ids := b.shared.sent[s.ClientID]
	delete(b.shared.sent, s.ClientID)
	for id, sm := range ids {
		e, ok := s.outbound.Get(id)
		switch {
		case ok && e.State == inflight.PublishSent && sm.qos == 1:
			b.requeue(batch, sm)
		case ok && e.State == inflight.PublishSent:
			b.dropped(sm.g.key, b.sharedTopic(sm), SharedMemberGone)
			b.forgetShared(batch, sm)
		default:
			b.forgetShared(batch, sm)
		}
	}
}

// requeue puts sm back into its group queue, in order. Caller holds b.mu.
func (b *Broker) requeue(batch *inflight.Batch, sm *sharedMsg) {
	g := sm.g
	sm.member, sm.packetID, sm.qos = "", 0, 0
	i := len(g.waiting)
	for i > 0 && g.waiting[i-1].order > sm.order {
		i--
	}
	g.waiting = append(g.waiting, nil)
	copy(g.waiting[i+1:], g.waiting[i:])
	g.waiting[i] = sm
	g.heldBytes += sm.msg.Size()
	sm.body = nil // waiting: read from the file when it is sent again
	batch.PutShared(sm.record())
	b.shared.kick[g] = true
}

// kickShared dispatches the groups that may have a member for their waiting messages since they
// were last dispatched (a QoS 1 message back in the queue, a member joined), in a batch of its
// own, submitted after the batch that made the change. Caller holds b.mu.
func (b *Broker) kickShared() {
	if len(b.shared.kick) == 0 {
		return
	}
	batch := &inflight.Batch{}
	var out outbox
	for g := range b.shared.kick {
		delete(b.shared.kick, g)
		if b.shared.groups[g.key] == g {
			b.dispatch(batch, g, &out)
		}
	}
	if batch.Len() == 0 && out.n == 0 {
		return
	}
	b.submit(batch, func(err error) {
		if err == nil {
			out.flush()
		}
	})
}

// sharedStats adds the groups to st. Caller holds b.mu.
func (b *Broker) sharedStats(st *Stats) {
	st.SharedGroups = len(b.shared.groups)
	for _, g := range b.shared.groups {
		st.SharedQueued += len(g.waiting)
		st.Subscriptions += len(g.members)
	}
	st.SharedNoMember = b.Metrics.SharedNoMember.Load()
	st.SharedMemberGone = b.Metrics.SharedMemberGone.Load()
}
