package session

import (
	"log/slog"

	"github.com/oncemq/oncemq/inflight"
)

// restoreShared rebuilds the group queues from what the journal recovered; the sessions and their
// subscriptions, which make the groups, are restored already. A record sent to a member that no
// longer holds it in flight (a member whose session lived in memory only and ended with the crash)
// is decided as memberGone decides: QoS 1 back to the queue, QoS 2 dropped and counted
// [MQTT-4.8.2-5]. Records of a group with no member left are dropped and counted. The changes go
// in one batch. Caller holds b.mu.
func (b *Broker) restoreShared(rec *inflight.Recovered) {
	if len(rec.Shared) == 0 {
		return
	}
	b.shared.init()
	batch := &inflight.Batch{}
	lost := 0
	for _, r := range rec.Shared {
		key := "$share/" + r.Group + "/" + r.Filter
		g := b.shared.groups[key]
		m := rec.Messages.Get(r.MsgSeq)
		if g == nil {
			g = &group{key: key, name: r.Group, filter: r.Filter} // gone: only to name the records
			sm := &sharedMsg{g: g, order: r.Order, msg: m}
			b.dropped(key, b.sharedTopic(sm), SharedNoMember)
			b.forgetShared(batch, sm)
			lost++
			continue
		}
		g.order = max(g.order, r.Order)
		sm := &sharedMsg{g: g, order: r.Order, msg: m}
		if r.Waiting() {
			g.waiting = append(g.waiting, sm)
			g.heldBytes += m.Size()
			continue
		}
		sm.member, sm.packetID, sm.qos = r.Member, r.PacketID, r.QoS
		if s := b.sessions[r.Member]; s != nil {
			if e, ok := s.outbound.Get(r.PacketID); ok && (e.State == inflight.PubrelSent || e.MsgSeq == r.MsgSeq) {
				ids := b.shared.sent[r.Member]
				if ids == nil {
					ids = make(map[uint16]*sharedMsg)
					b.shared.sent[r.Member] = ids
				}
				ids[r.PacketID] = sm
				continue
			}
		}
		if r.QoS == 1 {
			b.requeue(batch, sm)
			continue
		}
		b.dropped(key, b.sharedTopic(sm), SharedMemberGone)
		b.forgetShared(batch, sm)
		lost++
	}
	if lost > 0 {
		b.log.Warn("shared subscriptions: messages dropped at start-up (no member left, or QoS 2 sent to a member whose session ended)",
			slog.Int("messages", lost))
	}
	if batch.Len() > 0 {
		b.submit(batch, nil)
	}
}
