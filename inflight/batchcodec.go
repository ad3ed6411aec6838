package inflight

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/mochi-mqtt/server/v2/packets"
)

// The log's encoding of changes (see format.go, "Log"). A change is its kind byte, a uvarint mask
// of the op fields it sets, then those fields in the order of opFields. The codec knows fields,
// not kinds: a new kind of change needs no line here unless it stores a record (one case in
// hasRecord), and a new op field needs one line in opFields.

// opField is one field of op: whether a change sets it, and how it is written and read.
type opField struct {
	set func(o *op) bool
	put func(e *encoder, o *op) error
	get func(d *decoder, o *op) error
}

// opFields lists op's fields; a field's index is its bit in the mask. Records reuse the value
// encodings of the data file, so that the log and the file cannot disagree about a record.
var opFields = []opField{
	{func(o *op) bool { return o.clientID != "" }, func(e *encoder, o *op) error { e.str(o.clientID); return nil }, func(d *decoder, o *op) error { o.clientID = d.str(); return nil }},
	{func(o *op) bool { return o.session != nil }, func(e *encoder, o *op) error { return e.json(o.session) }, func(d *decoder, o *op) error { o.session = new(SessionRecord); return decodeJSON(d.bytes(), o.session) }},
	{func(o *op) bool { return o.sub != nil }, func(e *encoder, o *op) error { return e.json(o.sub) }, func(d *decoder, o *op) error { o.sub = new(SubscriptionRecord); return decodeJSON(d.bytes(), o.sub) }},
	{func(o *op) bool { return o.filter != "" }, func(e *encoder, o *op) error { e.str(o.filter); return nil }, func(d *decoder, o *op) error { o.filter = d.str(); return nil }},
	{func(o *op) bool { return o.packetID != 0 }, func(e *encoder, o *op) error { e.uint(uint64(o.packetID)); return nil }, func(d *decoder, o *op) error { o.packetID = uint16(d.uint()); return nil }},
	{func(o *op) bool { return o.reason != 0 }, func(e *encoder, o *op) error { e.uint(uint64(o.reason)); return nil }, func(d *decoder, o *op) error { o.reason = byte(d.uint()); return nil }},
	{func(o *op) bool { return o.out != nil }, putOutbound, getOutbound},
	{func(o *op) bool { return o.queued != nil }, func(e *encoder, o *op) error { e.raw(encodeQueued(o.queued)); return nil }, getQueued},
	{func(o *op) bool { return o.order != 0 }, func(e *encoder, o *op) error { e.uint(o.order); return nil }, func(d *decoder, o *op) error { o.order = d.uint(); return nil }},
	{func(o *op) bool { return o.msg != nil }, putMessage, getMessage},
	{func(o *op) bool { return o.seq != 0 }, func(e *encoder, o *op) error { e.uint(o.seq); return nil }, func(d *decoder, o *op) error { o.seq = d.uint(); return nil }},
	{func(o *op) bool { return o.topic != "" }, func(e *encoder, o *op) error { e.str(o.topic); return nil }, func(d *decoder, o *op) error { o.topic = d.str(); return nil }},
	{func(o *op) bool { return o.dedup != nil }, putDedup, getDedup},
	{func(o *op) bool { return o.shared != nil }, putShared, getShared},
}

// putShared writes a group queue change: its key's parts, then for a put the record's value.
func putShared(e *encoder, o *op) error {
	e.str(o.shared.Group)
	e.str(o.shared.Filter)
	e.uint(o.shared.Order)
	if o.kind == opPutShared {
		e.raw(encodeShared(o.shared))
	}
	return nil
}

func getShared(d *decoder, o *op) error {
	group, filter, order := d.str(), d.str(), d.uint()
	if o.kind != opPutShared {
		o.shared = &SharedRecord{Group: group, Filter: filter, Order: order}
		return nil
	}
	r, err := decodeShared(sharedKey(group, filter, order), d.bytes())
	o.shared = &r
	return err
}

func putOutbound(e *encoder, o *op) error {
	e.uint(uint64(o.out.PacketID))
	e.raw(encodeOutbound(o.out))
	return nil
}

func getOutbound(d *decoder, o *op) error {
	id := uint16(d.uint())
	r, err := decodeOutbound(d.bytes(), id)
	o.out = &r
	return err
}

func getQueued(d *decoder, o *op) error {
	r, err := decodeQueued(d.bytes())
	o.queued = &r
	return err
}

func putMessage(e *encoder, o *op) error {
	if n, ok := plainMessageSize(o.msg); ok {
		e.uint(o.msg.Seq)
		e.uint(uint64(n))
		e.buf = appendPlainMessage(e.buf, o.msg)
		return nil
	}
	v, err := encodeMessage(o.msg)
	if err != nil {
		return err
	}
	e.uint(o.msg.Seq)
	e.raw(v)
	return nil
}

// A message without properties, the common case, is written straight into the record, byte for
// byte what encodeMessageCodec writes (its value: version, times, the PUBLISH as MQTT 5 encodes
// it), but without the codec's per-property map lookups (half the cost of encoding a record in
// BenchmarkLogRecordEncode) and the value's own buffer. encodeMessageCodec stays the definition:
// every other message goes through it.

// plainMessageSize reports whether m can be written by appendPlainMessage, and its value's size.
func plainMessageSize(m *Message) (int, bool) {
	if len(m.Topic) > 65535 || m.QoS > 2 || !reflect.ValueOf(&m.Properties).Elem().IsZero() {
		return 0, false
	}
	remaining := plainPublishRemaining(m)
	if remaining > maxRemainingLength {
		return 0, false
	}
	return 17 + 1 + uvarintLen(remaining) + remaining, true
}

// maxRemainingLength is the largest Remaining Length of an MQTT packet (§1.5.5).
const maxRemainingLength = 268435455

// plainPublishRemaining is the Remaining Length of m as a PUBLISH without properties (MQTT 5).
func plainPublishRemaining(m *Message) int {
	n := 2 + len(m.Topic) + 1 + len(m.Payload) // topic length, topic, property length 0, payload
	if m.QoS > 0 {
		n += 2 // packet identifier
	}
	return n
}

// appendPlainMessage appends the value of m, for which plainMessageSize said yes.
func appendPlainMessage(buf []byte, m *Message) []byte {
	buf = append(buf, formatVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(m.Created))
	buf = binary.BigEndian.AppendUint64(buf, uint64(m.ExpiresAt))
	header := byte(packets.Publish<<4) | m.QoS<<1
	if m.Retain {
		header |= 0x01
	}
	buf = append(buf, header)
	for n := plainPublishRemaining(m); ; { // Remaining Length, a variable byte integer (§1.5.5)
		b := byte(n & 0x7f)
		if n >>= 7; n > 0 {
			b |= 0x80
		}
		buf = append(buf, b)
		if n == 0 {
			break
		}
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(m.Topic)))
	buf = append(buf, m.Topic...)
	if m.QoS > 0 {
		buf = binary.BigEndian.AppendUint16(buf, 1) // encodeMessage's packet id
	}
	buf = append(buf, 0) // no properties
	return append(buf, m.Payload...)
}

// uvarintLen is the bytes of n as a variable byte integer.
func uvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

func getMessage(d *decoder, o *op) error {
	seq := d.uint()
	m, err := decodeMessage(d.bytes())
	if err != nil {
		return err
	}
	m.Seq = seq
	o.msg = m
	return nil
}

func putDedup(e *encoder, o *op) error {
	e.str(o.dedup.Key)
	e.raw(encodeDedup(o.dedup))
	return nil
}

func getDedup(d *decoder, o *op) error {
	k := d.bytes()
	r, err := decodeDedup(k, d.bytes())
	o.dedup = &r
	return err
}

// appendOps appends the changes of a batch: their count, then each change.
func appendOps(buf []byte, ops []op) ([]byte, error) {
	e := encoder{buf: binary.AppendUvarint(buf, uint64(len(ops)))}
	for i := range ops {
		o := &ops[i]
		var mask uint64
		for f, field := range opFields {
			if field.set(o) {
				mask |= 1 << f
			}
		}
		e.buf = append(e.buf, byte(o.kind))
		e.uint(mask)
		for f, field := range opFields {
			if mask&(1<<f) == 0 {
				continue
			}
			if err := field.put(&e, o); err != nil {
				return buf, fmt.Errorf("change %d (kind %d): %w", i, o.kind, err)
			}
		}
	}
	return e.buf, nil
}

// readOps reads what appendOps wrote and checks each change as Submit would (validate).
func readOps(d *decoder) ([]op, error) {
	n := d.uint()
	if d.err != nil || n > uint64(len(d.buf)) { // every change takes at least two bytes
		return nil, fmt.Errorf("change count malformed")
	}
	ops := make([]op, n)
	for i := range ops {
		o := &ops[i]
		if len(d.buf) == 0 {
			return nil, fmt.Errorf("change %d: missing", i)
		}
		o.kind = opKind(d.buf[0])
		d.buf = d.buf[1:]
		mask := d.uint()
		if d.err != nil {
			return nil, fmt.Errorf("change %d (kind %d): %w", i, o.kind, d.err)
		}
		if mask>>len(opFields) != 0 {
			return nil, fmt.Errorf("change %d (kind %d): unknown fields 0x%x", i, o.kind, mask)
		}
		for f, field := range opFields {
			if mask&(1<<f) == 0 {
				continue
			}
			if err := field.get(d, o); err != nil {
				return nil, fmt.Errorf("change %d (kind %d): %w", i, o.kind, err)
			}
			if d.err != nil {
				return nil, fmt.Errorf("change %d (kind %d): %w", i, o.kind, d.err)
			}
		}
		if !hasRecord(o) {
			return nil, fmt.Errorf("change %d (kind %d): its record is missing", i, o.kind)
		}
		if o.msg != nil && o.kind == opPutMessage && o.msg.Seq != o.seq {
			return nil, fmt.Errorf("change %d: message %d stored under %d", i, o.msg.Seq, o.seq)
		}
		if err := o.validate(); err != nil {
			return nil, fmt.Errorf("change %d (kind %d): %w", i, o.kind, err)
		}
	}
	return ops, nil
}

// hasRecord reports whether a change has the record its kind stores (validate and apply read it).
func hasRecord(o *op) bool {
	switch o.kind {
	case opPutSession:
		return o.session != nil
	case opPutSubscription:
		return o.sub != nil
	case opPutOutbound:
		return o.out != nil
	case opPutQueued:
		return o.queued != nil
	case opPutMessage, opPutRetained:
		return o.msg != nil
	case opPutDedup:
		return o.dedup != nil
	case opPutShared, opDeleteShared:
		return o.shared != nil
	}
	return true
}

type encoder struct{ buf []byte }

func (e *encoder) uint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) raw(v []byte) {
	e.uint(uint64(len(v)))
	e.buf = append(e.buf, v...)
}
func (e *encoder) str(s string) {
	e.uint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}
func (e *encoder) json(rec any) error {
	v, err := encodeJSON(rec)
	if err != nil {
		return err
	}
	e.raw(v)
	return nil
}

// decoder reads a record; the first error sticks and later reads return zero values.
type decoder struct {
	buf []byte
	err error
}

var errShort = errors.New("record ends inside a field")

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// bytes returns a length-prefixed field, aliasing the record.
func (d *decoder) bytes() []byte {
	n := d.uint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)) {
		d.err = errShort
		return nil
	}
	v := d.buf[:n:n]
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes()) }
