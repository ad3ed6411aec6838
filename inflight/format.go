package inflight

// The on-disk format of the journal file. It is a compatibility contract: a broker must be able to
// open the file an earlier release wrote, so change it only by adding a new version byte and
// keeping the decoder of every earlier one.
//
// # File
//
// One bbolt file. Bucket meta, key "format", holds the file's format version (one byte, 1); Open
// refuses a file whose version it does not know.
//
// # Keys
//
// Integers in keys are big-endian, so that bbolt's byte order is numeric order and appends (message
// sequences, queue orders) stay at the right edge of the tree. Keys of per-client buckets are
//
//	clientID 0x00 suffix
//
// Client ids are MQTT UTF-8 strings, which never contain NUL [MQTT-1.5.4-2], so 0x00 ends the client
// id unambiguously and the prefix clientID+0x00 selects exactly one client's keys ("a" does not
// select "ab").
//
//	bucket    key                               value
//	sessions  clientID                          session
//	subs      clientID 0x00 filter              subscription
//	in        clientID 0x00 packetID u16        inbound
//	out       clientID 0x00 packetID u16        outbound
//	queue     clientID 0x00 order u64           queued
//	msgs      seq u64                           message
//	msgidx    seq u64                           index
//	retained  topic                             message
//	dedup     scope u8, len uvarint, name, id   dedup
//
// A dedup key (DedupKey) is not per client: scope is 'c' (name is the publisher's client id) or
// 't' (name is the topic), len is the byte length of name, and id is the publisher's dedup id. It
// survives the session of its client on purpose: it is what detects a resend after a Clean Start.
// The bucket is absent from files written before it existed; Open creates it.
//
// # Values
//
// Every value starts with a format version byte, 1. After it:
//
//	inbound       reason u8                                 (the PUBREC reason code sent)
//	outbound      state u8, qos u8, retain u8, order u64, msgSeq u64, subIDs
//	queued        qos u8, retain u8, order u64, msgSeq u64, subIDs
//	subIDs        count uvarint, then count x id uvarint    (encoding/binary uvarint)
//	message       created i64, expiresAt i64, PUBLISH
//	index         created i64, expiresAt i64, topicLen u16, payloadLen u32
//	session       encoding/json of SessionRecord            (rare writes; the will inline)
//	subscription  encoding/json of SubscriptionRecord
//	dedup         at i64, reason u8                         (accepted at, the answer sent; reason < 0x80)
//
// retain u8 is 0 or 1. created and expiresAt are unix nanoseconds (expiresAt 0: never). PUBLISH is
// the whole message encoded as an MQTT 5.0 PUBLISH packet (fixed header with QoS and retain, topic,
// packet id 1 if QoS > 0, properties, payload) by the mochi-mqtt packets codec with
// AllowResponseInfo set, so that Response Topic and Correlation Data are kept. The packet id in it
// means nothing. A message's Seq is its msgs key; a retained message has no Seq on disk.
//
// Every message has two records under the same seq, written and deleted in the same batch: its
// body in msgs and its index entry in msgidx, which holds what the broker keeps in memory of a
// queued message (Handle) and is all that start-up reads, so that recovery never touches a body.
// topicLen and payloadLen are the byte lengths of the topic and the payload in the body. Files
// written before msgidx existed have the bucket missing or empty while msgs is not: start-up then
// builds the index from msgs once, reading every body that one time.
//
// A JSON record may gain a field without a new version byte, provided an earlier release can
// ignore the key (encoding/json skips unknown keys) and a record without it decodes to a value
// that means what the earlier release meant. SessionRecord.Owner was added that way: a session
// record without "Owner" was written before sessions had owners, and its session belongs to the
// first identity that resumes it.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mochi-mqtt/server/v2/packets"
)

// formatVersion is the version byte that starts every value and the value of meta/format.
const formatVersion = 1

// ErrCorrupt is wrapped by Open when the file holds something this version cannot decode. The
// broker must not start on it: an empty state would drop every acknowledged message.
var ErrCorrupt = errors.New("inflight: data file corrupt")

// Bucket names.
var (
	bucketMeta     = []byte("meta")
	bucketSessions = []byte("sessions")
	bucketSubs     = []byte("subs")
	bucketIn       = []byte("in")
	bucketOut      = []byte("out")
	bucketQueue    = []byte("queue")
	bucketMsgs     = []byte("msgs")
	bucketMsgIdx   = []byte("msgidx")
	bucketRetained = []byte("retained")
	bucketDedup    = []byte("dedup")

	keyFormat = []byte("format")
)

// allBuckets lists every bucket Open creates.
var allBuckets = [][]byte{bucketMeta, bucketSessions, bucketSubs, bucketIn, bucketOut, bucketQueue, bucketMsgs, bucketMsgIdx, bucketRetained, bucketDedup}

// clientPrefix is the key prefix of every entry of one client in subs, in, out and queue.
func clientPrefix(clientID string) []byte {
	k := make([]byte, 0, len(clientID)+1)
	k = append(k, clientID...)
	return append(k, 0)
}

func packetIDKey(clientID string, id uint16) []byte {
	return binary.BigEndian.AppendUint16(clientPrefix(clientID), id)
}

func orderKey(clientID string, order uint64) []byte {
	return binary.BigEndian.AppendUint64(clientPrefix(clientID), order)
}

func filterKey(clientID, filter string) []byte {
	return append(clientPrefix(clientID), filter...)
}

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}

// splitKey splits a per-client key into client id and suffix.
func splitKey(k []byte) (clientID string, suffix []byte, ok bool) {
	i := bytes.IndexByte(k, 0)
	if i <= 0 {
		return "", nil, false
	}
	return string(k[:i]), k[i+1:], true
}

func encodeInbound(reason byte) []byte {
	return []byte{formatVersion, reason}
}

func decodeInbound(v []byte) (reason byte, err error) {
	if err := checkVersion(v); err != nil {
		return 0, err
	}
	if len(v) != 2 {
		return 0, fmt.Errorf("inbound value is %d bytes, want 2", len(v))
	}
	return v[1], nil
}

func encodeOutbound(r *OutboundRecord) []byte {
	v := make([]byte, 0, 20+len(r.SubIDs)*4+1)
	v = append(v, formatVersion, byte(r.State), r.QoS, boolByte(r.Retain))
	v = binary.BigEndian.AppendUint64(v, r.Order)
	v = binary.BigEndian.AppendUint64(v, r.MsgSeq)
	return appendSubIDs(v, r.SubIDs)
}

func decodeOutbound(v []byte, packetID uint16) (OutboundRecord, error) {
	if err := checkVersion(v); err != nil {
		return OutboundRecord{}, err
	}
	if len(v) < 20 {
		return OutboundRecord{}, fmt.Errorf("outbound value is %d bytes, want at least 20", len(v))
	}
	r := OutboundRecord{PacketID: packetID, State: OutboundState(v[1]), QoS: v[2]}
	if r.State != PublishSent && r.State != PubrelSent {
		return r, fmt.Errorf("outbound state %d unknown", v[1])
	}
	if r.QoS > 2 {
		return r, fmt.Errorf("QoS %d", r.QoS)
	}
	var err error
	if r.Retain, err = decodeBool(v[3]); err != nil {
		return r, err
	}
	r.Order = binary.BigEndian.Uint64(v[4:])
	r.MsgSeq = binary.BigEndian.Uint64(v[12:])
	r.SubIDs, err = decodeSubIDs(v[20:])
	return r, err
}

func encodeQueued(r *QueuedRecord) []byte {
	v := make([]byte, 0, 19+len(r.SubIDs)*4+1)
	v = append(v, formatVersion, r.QoS, boolByte(r.Retain))
	v = binary.BigEndian.AppendUint64(v, r.Order)
	v = binary.BigEndian.AppendUint64(v, r.MsgSeq)
	return appendSubIDs(v, r.SubIDs)
}

func decodeQueued(v []byte) (QueuedRecord, error) {
	if err := checkVersion(v); err != nil {
		return QueuedRecord{}, err
	}
	if len(v) < 19 {
		return QueuedRecord{}, fmt.Errorf("queue value is %d bytes, want at least 19", len(v))
	}
	r := QueuedRecord{QoS: v[1]}
	if r.QoS > 2 {
		return r, fmt.Errorf("QoS %d", r.QoS)
	}
	var err error
	if r.Retain, err = decodeBool(v[2]); err != nil {
		return r, err
	}
	r.Order = binary.BigEndian.Uint64(v[3:])
	r.MsgSeq = binary.BigEndian.Uint64(v[11:])
	r.SubIDs, err = decodeSubIDs(v[19:])
	return r, err
}

func appendSubIDs(v []byte, ids []int) []byte {
	v = binary.AppendUvarint(v, uint64(len(ids)))
	for _, id := range ids {
		v = binary.AppendUvarint(v, uint64(id))
	}
	return v
}

func decodeSubIDs(v []byte) ([]int, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 {
		return nil, errors.New("subscription identifier count malformed")
	}
	v = v[k:]
	if n > uint64(len(v)) { // every id takes at least one byte
		return nil, fmt.Errorf("subscription identifier count %d exceeds the value", n)
	}
	var ids []int
	if n > 0 {
		ids = make([]int, 0, n)
	}
	for range n {
		id, k := binary.Uvarint(v)
		if k <= 0 || id > maxSubscriptionID {
			return nil, errors.New("subscription identifier malformed")
		}
		ids = append(ids, int(id))
		v = v[k:]
	}
	if len(v) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(v))
	}
	return ids, nil
}

// maxSubscriptionID is the largest Subscription Identifier, a variable byte integer (§3.8.2.1.2).
const maxSubscriptionID = 268435455

// encodeMessage encodes m as a message value. m.Seq is the key and not part of the value.
func encodeMessage(m *Message) ([]byte, error) {
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: m.QoS, Retain: m.Retain},
		TopicName:       m.Topic,
		Payload:         m.Payload,
		Properties:      m.Properties,
		ProtocolVersion: 5,
		Mods:            packets.Mods{AllowResponseInfo: true},
	}
	if m.QoS > 0 {
		pk.PacketID = 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, 17+8+len(m.Topic)+len(m.Payload)+64))
	buf.WriteByte(formatVersion)
	var ts [16]byte
	binary.BigEndian.PutUint64(ts[:8], uint64(m.Created))
	binary.BigEndian.PutUint64(ts[8:], uint64(m.ExpiresAt))
	buf.Write(ts[:])
	if err := pk.PublishEncode(buf); err != nil {
		return nil, fmt.Errorf("encode message %d on %q: %w", m.Seq, m.Topic, err)
	}
	return buf.Bytes(), nil
}

// decodeMessage decodes a message value. v may be bbolt memory: it is copied first, because the
// codec's results alias its input (strings included) and bbolt memory is valid only inside the
// transaction.
func decodeMessage(v []byte) (*Message, error) {
	if err := checkVersion(v); err != nil {
		return nil, err
	}
	if len(v) < 19 {
		return nil, fmt.Errorf("message value is %d bytes, want at least 19", len(v))
	}
	v = bytes.Clone(v)
	m := &Message{
		Created:   int64(binary.BigEndian.Uint64(v[1:])),
		ExpiresAt: int64(binary.BigEndian.Uint64(v[9:])),
	}
	raw := v[17:]
	var fh packets.FixedHeader
	if err := fh.Decode(raw[0]); err != nil {
		return nil, fmt.Errorf("message fixed header: %w", err)
	}
	if fh.Type != packets.Publish {
		return nil, fmt.Errorf("message is packet type %d, want PUBLISH", fh.Type)
	}
	remaining, n, err := packets.DecodeLength(bytes.NewReader(raw[1:]))
	if err != nil {
		return nil, fmt.Errorf("message length: %w", err)
	}
	body := raw[1+n:]
	if remaining != len(body) {
		return nil, fmt.Errorf("message length %d, but %d bytes follow", remaining, len(body))
	}
	pk := packets.Packet{FixedHeader: fh, ProtocolVersion: 5}
	if err := pk.PublishDecode(body); err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	m.Topic = pk.TopicName
	m.Payload = pk.Payload
	m.QoS = fh.Qos
	m.Retain = fh.Retain
	m.Properties = pk.Properties
	return m, nil
}

// messageIndex is the index record of a message (bucket msgidx): what recovery reads instead of
// the body.
type messageIndex struct {
	created, expiresAt int64
	topicLen           uint16
	payloadLen         uint32
}

func indexOf(m *Message) messageIndex {
	return messageIndex{created: m.Created, expiresAt: m.ExpiresAt, topicLen: uint16(len(m.Topic)),
		payloadLen: uint32(min(len(m.Payload), 1<<32-1))}
}

func encodeIndex(x messageIndex) []byte {
	v := make([]byte, 0, 23)
	v = append(v, formatVersion)
	v = binary.BigEndian.AppendUint64(v, uint64(x.created))
	v = binary.BigEndian.AppendUint64(v, uint64(x.expiresAt))
	v = binary.BigEndian.AppendUint16(v, x.topicLen)
	return binary.BigEndian.AppendUint32(v, x.payloadLen)
}

func decodeIndex(v []byte) (messageIndex, error) {
	if err := checkVersion(v); err != nil {
		return messageIndex{}, err
	}
	if len(v) != 23 {
		return messageIndex{}, fmt.Errorf("index value is %d bytes, want 23", len(v))
	}
	x := messageIndex{
		created:    int64(binary.BigEndian.Uint64(v[1:])),
		expiresAt:  int64(binary.BigEndian.Uint64(v[9:])),
		topicLen:   binary.BigEndian.Uint16(v[17:]),
		payloadLen: binary.BigEndian.Uint32(v[19:]),
	}
	if x.topicLen == 0 {
		return x, errors.New("index of a message without a topic")
	}
	return x, nil
}

// handle is the in-memory index entry the record describes.
func (x messageIndex) handle(seq uint64) *Handle {
	return &Handle{Seq: seq, ExpiresAt: x.expiresAt, Payload: x.payloadLen, Topic: x.topicLen}
}

func encodeJSON(rec any) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return append([]byte{formatVersion}, b...), nil
}

func decodeJSON(v []byte, rec any) error {
	if err := checkVersion(v); err != nil {
		return err
	}
	return json.Unmarshal(v[1:], rec)
}

func checkVersion(v []byte) error {
	if len(v) == 0 {
		return errors.New("empty value")
	}
	if v[0] != formatVersion {
		return fmt.Errorf("format version %d unknown (this build reads %d)", v[0], formatVersion)
	}
	return nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func decodeBool(b byte) (bool, error) {
	switch b {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, fmt.Errorf("flag byte %d, want 0 or 1", b)
}

// validName reports whether s can be a client id, filter or topic in this format: non-empty, UTF-8,
// no NUL (the key separator, and refused by the codec on decode).
func validName(s string) bool {
	return s != "" && len(s) <= 65535 && utf8.ValidString(s) && !strings.Contains(s, "\x00")
}
