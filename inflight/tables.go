package inflight

import "sort"

// maxPacketID is the largest packet identifier; identifiers are 1..65535 [MQTT-2.2.1-3].
const maxPacketID = 65535

// Inbound is one session's table of QoS 2 packet ids received from the client and answered with
// PUBREC, awaiting PUBREL. It is separate from Outbound: the same number may be in flight in both
// directions at once. Not safe for concurrent use; the session layer guards it.
type Inbound struct {
	reasons map[uint16]byte
}

// Lookup returns the PUBREC reason code sent for id, if id awaits PUBREL.
func (t *Inbound) Lookup(id uint16) (reason byte, ok bool) {
	reason, ok = t.reasons[id]
	return reason, ok
}

// Add records that id was answered with PUBREC reason.
func (t *Inbound) Add(id uint16, reason byte) {
	if t.reasons == nil {
		t.reasons = make(map[uint16]byte)
	}
	t.reasons[id] = reason
}

// Remove frees id and reports whether it was there.
func (t *Inbound) Remove(id uint16) bool {
	_, ok := t.reasons[id]
	delete(t.reasons, id)
	return ok
}

// Len is the number of ids awaiting PUBREL.
func (t *Inbound) Len() int { return len(t.reasons) }

// Records lists the table for storing, in id order.
func (t *Inbound) Records() []InboundRecord {
	recs := make([]InboundRecord, 0, len(t.reasons))
	for id, r := range t.reasons {
		recs = append(recs, InboundRecord{PacketID: id, Reason: r})
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].PacketID < recs[j].PacketID })
	return recs
}

// OutboundEntry is one delivery in flight from the broker to the client.
type OutboundEntry struct {
	OutboundRecord
	Msg *Handle // nil once State is PubrelSent
	// Body is the message's body while the session pins it (it is connected, or not durable);
	// nil otherwise, and then read with Journal.LoadMessage when the PUBLISH is sent again.
	Body *Message
}

// Outbound is one session's table of packet ids the broker used for QoS 1 and 2 deliveries still
// unacknowledged, with the id allocator. Not safe for concurrent use; the session layer guards it.
type Outbound struct {
	entries map[uint16]*OutboundEntry
	last    uint16 // last id allocated; allocation goes on from here so ids are not reused at once
}

// Allocate returns an id not in use, or false if all 65535 are.
// Ids are never reused while in flight [MQTT-2.2.1-4].
func (t *Outbound) Allocate() (uint16, bool) {
	if len(t.entries) >= maxPacketID {
		return 0, false
	}
	id := t.last
	for {
		id++
		if id == 0 {
			id = 1
		}
		if _, used := t.entries[id]; !used {
			t.last = id
			return id, true
		}
	}
}

// Add puts an entry in the table; its PacketID must come from Allocate or from recovery.
func (t *Outbound) Add(e *OutboundEntry) {
	if t.entries == nil {
		t.entries = make(map[uint16]*OutboundEntry)
	}
	t.entries[e.PacketID] = e
	if e.PacketID > t.last {
		t.last = e.PacketID
	}
}

// Get returns the entry for id.
func (t *Outbound) Get(id uint16) (*OutboundEntry, bool) {
	e, ok := t.entries[id]
	return e, ok
}

// Remove frees id and returns its entry.
func (t *Outbound) Remove(id uint16) (*OutboundEntry, bool) {
	e, ok := t.entries[id]
	delete(t.entries, id)
	return e, ok
}

// Len is the number of deliveries in flight; it counts against the client's Receive Maximum.
func (t *Outbound) Len() int { return len(t.entries) }

// InOrder lists the entries in their original delivery order, for the resend on resume.
func (t *Outbound) InOrder() []*OutboundEntry {
	es := make([]*OutboundEntry, 0, len(t.entries))
	for _, e := range t.entries {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Order < es[j].Order })
	return es
}
