package inflight

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// SharedRecord is one message of a shared subscription group's queue (§4.8.2), bucket shared,
// key Group 0x00 Filter 0x00 Order. The group keeps it from the moment the message is routed to
// the group until the member it was sent to completes it (or refuses it), so that an
// acknowledgement to the publisher never rests on a member whose session lives in memory only.
type SharedRecord struct {
	Group  string // the share name
	Filter string // the topic filter after the share name
	Order  uint64 // the group's delivery order
	MsgSeq uint64 // the message, in bucket msgs
	// Member is the client id the message was sent to, "" while it waits in the group queue.
	// PacketID and QoS are that member's outbound packet id and the QoS it was sent at.
	Member   string
	PacketID uint16
	QoS      byte
}

// Waiting reports whether the record waits in the group queue (sent to no member).
func (r *SharedRecord) Waiting() bool { return r.Member == "" }

// sharedKey is Group 0x00 Filter 0x00 Order u64. Share names and filters never hold NUL
// [MQTT-1.5.4-2], so the first 0x00 ends the group, and the order is the last 8 bytes.
func sharedKey(group, filter string, order uint64) []byte {
	k := make([]byte, 0, len(group)+len(filter)+10)
	k = append(k, group...)
	k = append(k, 0)
	k = append(k, filter...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, order)
}

func splitSharedKey(k []byte) (group, filter string, order uint64, err error) {
	i := bytes.IndexByte(k, 0)
	if i <= 0 || len(k) < i+1+1+1+8 || k[len(k)-9] != 0 {
		return "", "", 0, errors.New("shared key is not group 0x00 filter 0x00 order")
	}
	group, filter = string(k[:i]), string(k[i+1:len(k)-9])
	if !validName(group) || !validName(filter) || strings.ContainsAny(group, "/+#") {
		return "", "", 0, fmt.Errorf("shared key names group %q filter %q", group, filter)
	}
	return group, filter, binary.BigEndian.Uint64(k[len(k)-8:]), nil
}

// encodeShared: version, qos u8, packetID u16, msgSeq u64, member (the rest of the value).
func encodeShared(r *SharedRecord) []byte {
	v := make([]byte, 0, 12+len(r.Member))
	v = append(v, formatVersion, r.QoS)
	v = binary.BigEndian.AppendUint16(v, r.PacketID)
	v = binary.BigEndian.AppendUint64(v, r.MsgSeq)
	return append(v, r.Member...)
}

func decodeShared(k, v []byte) (SharedRecord, error) {
	var r SharedRecord
	var err error
	if r.Group, r.Filter, r.Order, err = splitSharedKey(k); err != nil {
		return r, err
	}
	if err := checkVersion(v); err != nil {
		return r, err
	}
	if len(v) < 12 {
		return r, fmt.Errorf("shared value is %d bytes, want at least 12", len(v))
	}
	r.QoS = v[1]
	r.PacketID = binary.BigEndian.Uint16(v[2:])
	r.MsgSeq = binary.BigEndian.Uint64(v[4:])
	r.Member = string(v[12:])
	return r, r.validate()
}

func (r *SharedRecord) validate() error {
	if !validName(r.Group) || strings.ContainsAny(r.Group, "/+#") || !validName(r.Filter) {
		return fmt.Errorf("group %q filter %q", r.Group, r.Filter)
	}
	if r.MsgSeq == 0 {
		return errors.New("shared record without a message")
	}
	if r.Waiting() {
		if r.PacketID != 0 || r.QoS != 0 {
			return errors.New("waiting shared record with a packet id or QoS")
		}
		return nil
	}
	if !validName(r.Member) {
		return fmt.Errorf("member %q", r.Member)
	}
	if r.PacketID == 0 || r.QoS < 1 || r.QoS > 2 {
		return fmt.Errorf("sent shared record with packet id %d QoS %d", r.PacketID, r.QoS)
	}
	return nil
}

// PutShared stores or replaces one message of a group's queue: waiting, or sent to a member.
func (b *Batch) PutShared(rec SharedRecord) {
	b.ops = append(b.ops, op{kind: opPutShared, shared: &rec})
}

// DeleteShared removes one message of a group's queue (completed, refused, dropped). The message
// itself is reference-counted by the caller (see Message.Unref).
func (b *Batch) DeleteShared(group, filter string, order uint64) {
	b.ops = append(b.ops, op{kind: opDeleteShared, shared: &SharedRecord{Group: group, Filter: filter, Order: order}})
}

// validateShared checks a shared change before the commit.
func (o *op) validateShared() error {
	if o.kind == opDeleteShared {
		if !validName(o.shared.Group) || !validName(o.shared.Filter) {
			return fmt.Errorf("group %q filter %q", o.shared.Group, o.shared.Filter)
		}
		return nil
	}
	return o.shared.validate()
}

// applyShared writes a shared change into bucket shared.
func (bk buckets) applyShared(o *op) error {
	k := sharedKey(o.shared.Group, o.shared.Filter, o.shared.Order)
	if o.kind == opDeleteShared {
		return bk.shared.Delete(k)
	}
	return put(bk.shared, bucketShared, k, encodeShared(o.shared))
}

func (o *op) sharedString() string {
	r := o.shared
	if o.kind == opDeleteShared {
		return fmt.Sprintf("delete shared %s %s %d", r.Group, r.Filter, r.Order)
	}
	if r.Waiting() {
		return fmt.Sprintf("put shared %s %s %d waiting msg=%d", r.Group, r.Filter, r.Order, r.MsgSeq)
	}
	return fmt.Sprintf("put shared %s %s %d sent to %s %d qos=%d msg=%d", r.Group, r.Filter, r.Order, r.Member, r.PacketID, r.QoS, r.MsgSeq)
}

func (r *recovery) readShared(k, v []byte) error {
	rec, err := decodeShared(k, v)
	if err != nil {
		return err
	}
	r.lastSeq = max(r.lastSeq, rec.MsgSeq)
	r.shared = append(r.shared, rec)
	return nil
}

// resolveShared counts the group queues' references to their messages with ref, which records a
// record whose message is missing or damaged as damage (batches are atomic, a crash cannot leave
// one), and keeps the records whose message is there.
func (r *recovery) resolveShared(ref func(bucket string, key []byte, seq uint64) bool) {
	kept := r.shared[:0]
	for _, rec := range r.shared {
		if ref("shared", sharedKey(rec.Group, rec.Filter, rec.Order), rec.MsgSeq) {
			kept = append(kept, rec)
		}
	}
	r.shared = kept
}

// checkShared checks the group queues: orders ascending within a group, each record valid, each
// (member, packet id) sent once; and counts their message references.
func (c *checker) checkShared(recs []SharedRecord) {
	sent := make(map[string]bool)
	for i := range recs {
		rec := &recs[i]
		if err := rec.validate(); err != nil {
			c.bad("shared %s %s %d: %v", rec.Group, rec.Filter, rec.Order, err)
		}
		if i > 0 {
			p := &recs[i-1]
			if p.Group == rec.Group && p.Filter == rec.Filter && p.Order >= rec.Order {
				c.bad("shared %s %s: not sorted by order at %d", rec.Group, rec.Filter, rec.Order)
			}
		}
		if !rec.Waiting() {
			k := fmt.Sprintf("%s\x00%d", rec.Member, rec.PacketID)
			if sent[k] {
				c.bad("shared: member %q packet id %d holds two group messages", rec.Member, rec.PacketID)
			}
			sent[k] = true
		}
		c.refs[rec.MsgSeq]++
	}
}
