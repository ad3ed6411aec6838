package session

import (
	"bytes"
	"cmp"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// DedupOptions configures duplicate detection by the publisher's own message id (the dedup id): a
// QoS 1 or 2 PUBLISH that carries an id already in the window is answered as its first copy was
// and not routed. The zero value turns it off.
type DedupOptions struct {
	// Property is the name of the 5.0 user property holding the id; "" reads none.
	Property string
	// JSONField is a top-level field of a JSON payload holding the id (a string or a number), read
	// when the PUBLISH has no id property: 3.1.1 publishers cannot send properties. "" reads none.
	JSONField string
	// TopicScope keys ids by (topic, id) instead of (client id, id): several gateways forwarding
	// the same reading.
	TopicScope bool
	// Window is how long an id is remembered; Max how many ids at most. The oldest leave first.
	// Either at 0 turns the feature off.
	Window time.Duration
	Max    int
}

func (o DedupOptions) on() bool { return o.Window > 0 && o.Max > 0 }

// dedupDeletesPerBatch bounds the ids that left the window deleted from the file per batch: at
// most one id enters per batch, so deletions keep up while each batch stays small.
const dedupDeletesPerBatch = 8

// DedupDuplicate is the user property a 5.0 PUBACK or PUBREC carries when it answers a duplicate
// (unless the client set Request Problem Information to 0 [MQTT-3.1.2-29]).
var DedupDuplicate = packets.UserProperty{Key: "dedup", Val: "duplicate"}

// dedupState is the broker's window and the ids that left it but are still in the file. Guarded
// by Broker.mu.
type dedupState struct {
	window *dedupWindow
	gone   []string // keys to delete from the file, oldest first
}

// dedupKey returns the dedup key of m published by s's client, or "" when m is not deduplicated.
// Caller holds b.mu.
func (b *Broker) dedupKey(s *Session, m *inflight.Message) string {
	o := &b.opts.Dedup
	if m.QoS == 0 || !o.on() {
		return "" // QoS 0 is never stored: its id promises nothing
	}
	id := ""
	if o.Property != "" {
		for _, p := range m.Properties.User {
			if p.Key == o.Property {
				id = p.Val
				break
			}
		}
	}
	if id == "" && o.JSONField != "" {
		id = jsonField(m.Payload, o.JSONField)
	}
	if id == "" {
		return ""
	}
	if o.TopicScope {
		return inflight.DedupKey(inflight.DedupScopeTopic, m.Topic, id)
	}
	return inflight.DedupKey(inflight.DedupScopeClient, s.ClientID, id)
}

// jsonField returns the top-level field name of a JSON object payload, a string or a number as
// written; "" when the payload is not a JSON object or has no such field of those types.
func jsonField(payload []byte, name string) string {
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || p[0] != '{' {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(p, &obj) != nil {
		return ""
	}
	raw, ok := obj[name]
	if !ok || len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return ""
		}
		return v
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return ""
	}
	return n.String()
}

// dedupRepeat answers m if its key is in the window: a duplicate of a message already accepted.
// It is acknowledged with the first copy's reason code once every earlier commit is done (the
// first copy's among them), and not routed or retained. A QoS 2 duplicate under a new packet id
// still enters the inbound table under that id, so that its PUBREL completes as usual. It reports
// whether m was such a duplicate. Caller holds b.mu, in the same critical section as the fan-out
// of the copy it would otherwise become, so two copies at once resolve to one delivery.
func (b *Broker) dedupRepeat(s *Session, c Conn, m *inflight.Message, id uint16, key string) bool {
	if key == "" {
		return false
	}
	e := b.dedupFind(key)
	if e == nil {
		return false
	}
	code := reason.Code(e.reason)
	b.Metrics.DuplicatesByDedupID.Add(1)
	b.log.Debug("duplicate publish: not routed", slog.String("client", s.ClientID), slog.String("topic", m.Topic),
		slog.String("by", "dedup id"), slog.Uint64("qos", uint64(m.QoS)), slog.Uint64("packet_id", uint64(id)))
	batch := &inflight.Batch{}
	typ := byte(packets.Puback)
	if m.QoS == 2 {
		typ = packets.Pubrec
		s.inbound.Add(id, byte(code))
		if s.durable() {
			batch.PutInbound(s.ClientID, id, byte(code))
		}
	}
	reply := ack(typ, id, code)
	if s.protocolVersion == 5 && !s.noProblemInfo {
		pk := reply.Packet()
		pk.Properties.User = []packets.UserProperty{DedupDuplicate}
		reply = PacketOf(pk)
	}
	b.submit(batch, func(err error) {
		if err != nil {
			c.Close(reason.UnspecifiedError) // the first copy may never have reached the disk
			return
		}
		c.Send(reply)
	})
	return true
}

// dedupFind returns the window's entry of key, after the ids too old for the window have left it.
// Caller holds b.mu.
func (b *Broker) dedupFind(key string) *dedupEntry {
	b.dedupExpire()
	return b.dedup.window.lookup(key)
}

// dedupExpire moves the ids older than the window out of it. Caller holds b.mu.
func (b *Broker) dedupExpire() {
	w := b.dedup.window
	limit := b.now().UnixNano() - int64(b.opts.Dedup.Window)
	for e := w.oldest(); e != nil && e.at <= limit; e = w.oldest() {
		b.dedup.gone = append(b.dedup.gone, w.removeOldest())
	}
}

// dedupRemember puts key, the dedup id of a message accepted with code (below 0x80), in the window
// and in batch, the one that routes the message, so that the id and the fan-out are durable
// together. The oldest id leaves if the window is full. Every accepting batch also deletes a few
// ids that left the window from the file. Caller holds b.mu.
func (b *Broker) dedupRemember(batch *inflight.Batch, key string, code reason.Code) {
	if key != "" && !code.IsFailure() {
		w := b.dedup.window
		b.dedupExpire()
		for w.Len() >= b.opts.Dedup.Max {
			b.dedup.gone = append(b.dedup.gone, w.removeOldest())
		}
		at := b.now().UnixNano()
		w.add(key, at, byte(code))
		batch.PutDedup(inflight.DedupRecord{Key: key, At: at, Reason: byte(code)})
	}
	b.dedupDeleteGone(batch)
}

// dedupDeleteGone adds to batch the deletion of at most dedupDeletesPerBatch ids that left the
// window. A key that came back into the window since is skipped: its record is the new one.
// Caller holds b.mu.
func (b *Broker) dedupDeleteGone(batch *inflight.Batch) {
	gone := b.dedup.gone
	n := min(len(gone), dedupDeletesPerBatch)
	for _, key := range gone[:n] {
		if b.dedup.window.lookup(key) == nil {
			batch.DeleteDedup(key)
		}
	}
	clear(gone[:n])
	b.dedup.gone = gone[n:]
	if len(b.dedup.gone) == 0 {
		b.dedup.gone = nil // let the backing array go
	}
}

// restoreDedup rebuilds the window from the ids the journal recovered: those still young enough,
// at most Max of them, the newest kept. The others (aged out while the broker was down, or the
// feature turned off) are deleted from the file in later batches. Caller holds b.mu.
func (b *Broker) restoreDedup(recs []inflight.DedupRecord) {
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, func(x, y inflight.DedupRecord) int {
		return cmp.Or(cmp.Compare(x.At, y.At), strings.Compare(x.Key, y.Key))
	})
	keepFrom := len(recs) // recs[keepFrom:] stay in the window
	if b.opts.Dedup.on() {
		limit := b.now().UnixNano() - int64(b.opts.Dedup.Window)
		young := sort.Search(len(recs), func(i int) bool { return recs[i].At > limit })
		keepFrom = max(young, len(recs)-b.opts.Dedup.Max)
	}
	for _, r := range recs[:keepFrom] {
		b.dedup.gone = append(b.dedup.gone, r.Key)
	}
	for _, r := range recs[keepFrom:] {
		b.dedup.window.add(r.Key, r.At, r.Reason)
	}
}
