package inflight

// The on-disk format of the journal file. It is a compatibility contract: a broker must be able to
// open the file an earlier release wrote, so change it only by adding a new version byte and
// keeping the decoder of every earlier one.
//
// # File
//
// One bbolt file and its log (see Log below). Bucket meta, key "format", holds the file's format
// version: in format 2 the byte 2 sealed like every value (5 bytes, see Values), in format 1 the
// single byte 1. Open refuses a file whose version it does not know, and a bbolt file without
// meta/format; it migrates a format 1 file to format 2 (migrate.go) with the decoders below, which
// read both. Key "log" holds the log index the file covers; a file without it has had no
// checkpoint (index 0).
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
//	shared    group 0x00 filter 0x00 order u64  shared
//
// A dedup key (DedupKey) is not per client: scope is 'c' (name is the publisher's client id) or
// 't' (name is the topic), len is the byte length of name, and id is the publisher's dedup id. It
// survives the session of its client on purpose: it is what detects a resend after a Clean Start.
// The bucket is absent from files written before it existed; Open creates it.
//
// A shared key (bucket shared) is the queue of one shared subscription group
// "$share/{group}/{filter}": group is the share name (no '/', '+', '#'), filter the topic filter
// after it, order the group's delivery order. Neither holds NUL, so the first 0x00 ends the group
// and the last 8 bytes are the order. A record stays from the routing of its message to the group
// until the member it was sent to completes or refuses it. The bucket is absent from files written
// before shared subscriptions existed (format 1); Open creates it.
//
// # Values
//
// Every value starts with a format version byte (2; 1 in a format 1 file) and, in format 2, ends
// with a checksum:
//
//	version u8, body, crc u32
//
// crc is the CRC-32C (Castagnoli, hash/crc32), big-endian, of the bucket name, one 0x00 byte, the
// key, and the value before the crc (version and body); checksum.go says why the bucket is in it.
// A format 1 value is version u8, body, with no crc. The body is the same in both versions:
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
//	shared        qos u8, packetID u16, msgSeq u64, member  (member: the rest of the value, UTF-8)
//
// A shared value with an empty member waits in the group queue (qos and packetID 0); with a member
// it was sent to that client at qos (1 or 2) under that outbound packetID. msgSeq refers to bucket
// msgs like the queue and outbound entries, and counts as a reference.
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
// topicLen and payloadLen are the byte lengths of the topic and the payload in the body. A body's
// checksum is verified when the body is read (LoadMessage), inspect and repair read them all. In
// format 2 a record of one bucket without its twin in the other is damage. A format 1 file has no
// msgidx: migration reads every body that one time and writes both records.
//
// # Log
//
// The log (wal.go) is two files beside the data file, segments, named after it with the extension
// .wal and .wal.1 (oncemq.db: oncemq.wal, oncemq.wal.1). Every commit appends one record to the
// current segment; a checkpoint applies a segment's records to the data file and empties it
// (truncated, then preallocated: zeros). In a segment, records follow each other from offset 0, and
// zeros after the last one are the segment's end. Records of both segments are read in index
// order. A record is
//
//	length u32, crc u32, payload                  (length: payload bytes; crc: CRC-32C, Castagnoli,
//	                                               of the payload; both big-endian)
//	payload   version u8 (1), index u64, count uvarint, count x batch
//	batch     count uvarint, count x change
//	change    kind u8, mask uvarint, then for each bit set in mask, lowest first, its field:
//	  bit 0  client id       string
//	  bit 1  session         bytes (the session value above)
//	  bit 2  subscription    bytes (the subscription value above)
//	  bit 3  filter          string
//	  bit 4  packet id       uvarint
//	  bit 5  reason          uvarint
//	  bit 6  outbound        packet id uvarint, bytes (the outbound value above)
//	  bit 7  queued          bytes (the queued value above)
//	  bit 8  order           uvarint
//	  bit 9  message         seq uvarint, bytes (the message value above)
//	  bit 10 seq             uvarint
//	  bit 11 topic           string (also the dedup key of a dedup deletion)
//	  bit 12 dedup           key string, bytes (the dedup value above)
//	string, bytes: length uvarint, then the bytes
//
// kind is the opKind of batch.go (1 put session ... 16 delete dedup). Index numbers records from 1,
// consecutively, across checkpoints: bucket meta, key "log", holds the index of the last record
// applied to the file (version byte, then u64), written in the checkpoint's transaction (etcd's
// consistent index). Recovery applies the records after it and skips the others. An incomplete
// record or one whose crc does not match, with no valid record after it, is a torn write and is
// discarded; anything else that does not decode is damage.
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

// formatVersion is the version byte that starts every value written now and the version in
// meta/format. formatV1 is the version before values carried a checksum: Open migrates such a
// file (migrate.go), reading it with the same decoders.
const (
	formatVersion = 2
	formatV1      = 1
)

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
	bucketShared   = []byte("shared")

	keyFormat = []byte("format")
)

// allBuckets lists every bucket Open creates.
var allBuckets = [][]byte{bucketMeta, bucketSessions, bucketSubs, bucketIn, bucketOut, bucketQueue, bucketMsgs, bucketMsgIdx, bucketRetained, bucketDedup, bucketShared}

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

// encodeMessage encodes m as a message value. m.Seq is the key and not part of the value. A
// message without properties, the common case, takes appendPlainMessage (batchcodec.go), which
// writes the same bytes without the codec's per-property work: checkpoints and the replay at
// start-up encode every message they apply.
func encodeMessage(m *Message) ([]byte, error) {
	if n, ok := plainMessageSize(m); ok {
		return appendPlainMessage(make([]byte, 0, n), m), nil
	}
	return encodeMessageCodec(m)
}

// encodeMessageCodec encodes m through the MQTT codec: the definition of a message value (its
// version, creation and expiry times, then the PUBLISH as MQTT 5 encodes it with packet id 1),
// which the fast path is checked against.
func encodeMessageCodec(m *Message) ([]byte, error) {
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

// checkVersion checks the version byte of a value, its checksum already removed (unseal). The
// layout after the version byte is the same in versions 1 and 2, so one decoder reads both.
func checkVersion(v []byte) error {
	if len(v) == 0 {
		return errors.New("empty value")
	}
	if v[0] != formatVersion && v[0] != formatV1 {
		return fmt.Errorf("format version %d unknown (this build reads %d and %d)", v[0], formatV1, formatVersion)
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
