// Package wire puts MQTT packets on a byte stream and takes them off it, around the mochi codec:
// the Remaining Length (at most 4 bytes, minimally encoded), a size bound checked before the body
// is allocated, and decoding and encoding by packet type in both directions, with the codec's gaps
// filled. The broker, its test client and the torture client all read and write through it, so a
// fix here is a fix everywhere.
package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/mochi-mqtt/server/v2/packets"
)

// ErrMalformed is wrapped by every error about bytes that are not a valid packet.
var ErrMalformed = errors.New("malformed packet")

// ErrTooLarge is wrapped by ReadFrame's error for a packet over its size bound.
var ErrTooLarge = errors.New("packet too large")

// ReadRemainingLength reads a Variable Byte Integer and rejects encodings longer than 4 bytes or
// not minimal [MQTT-1.5.5-1] (the codec accepts 80 80 80 80 00 as 0).
func ReadRemainingLength(r io.ByteReader) (int, error) {
	var n, shift int
	for i := 0; i < 4; i++ {
		b, err := r.ReadByte()
		if err != nil {
			return 0, noEOF(err) // the fixed header byte came before: the packet is cut
		}
		if i > 0 && b == 0 {
			return 0, fmt.Errorf("%w: remaining length not minimally encoded", ErrMalformed)
		}
		n |= int(b&0x7F) << shift
		if b&0x80 == 0 {
			return n, nil
		}
		shift += 7
	}
	return 0, fmt.Errorf("%w: remaining length longer than 4 bytes", ErrMalformed)
}

// Reader is what ReadFrame reads from: a *bufio.Reader, or a wrapper that records the bytes.
type Reader interface {
	io.Reader
	io.ByteReader
}

// Which side may send each packet type (MQTT 5.0 section 2.1.2).
const (
	byClient = 1 << iota
	byServer
)

var senders = [16]uint8{
	packets.Connect: byClient, packets.Connack: byServer,
	packets.Publish: byClient | byServer, packets.Puback: byClient | byServer, packets.Pubrec: byClient | byServer,
	packets.Pubrel: byClient | byServer, packets.Pubcomp: byClient | byServer,
	packets.Subscribe: byClient, packets.Suback: byServer, packets.Unsubscribe: byClient, packets.Unsuback: byServer,
	packets.Pingreq: byClient, packets.Pingresp: byServer, packets.Disconnect: byClient | byServer, packets.Auth: byClient | byServer,
}

// FromClient reports whether a client may send packets of type typ.
func FromClient(typ byte) bool { return typ < 16 && senders[typ]&byClient != 0 }

// FromServer reports whether a server may send packets of type typ.
func FromServer(typ byte) bool { return typ < 16 && senders[typ]&byServer != 0 }

// ReadFrame reads the rest of a packet whose first byte hb was already read: the fixed header is
// decoded into pk, and the body returned undecoded. maxSize (0: none) bounds the whole packet
// before its body is allocated [MQTT-3.2.2-15]. The body is a fresh buffer, so the strings and
// slices the decoder aliases into it stay valid for as long as they are kept.
func ReadFrame(hb byte, r Reader, version byte, maxSize int) (pk packets.Packet, body []byte, err error) {
	return ReadFrameWith(hb, r, version, maxSize, nil)
}

// ReadFrameWith is ReadFrame that first asks acquire, if not nil, for the body's bytes, once the
// remaining length is known and before the body is allocated; an error from it is returned as is.
// The caller gives the bytes (pk.FixedHeader.Remaining) back once done with the body, if acquire
// was called and succeeded (body not nil, or err not from acquire).
func ReadFrameWith(hb byte, r Reader, version byte, maxSize int, acquire func(n int) error) (pk packets.Packet, body []byte, err error) {
	if err := pk.FixedHeader.Decode(hb); err != nil {
		return pk, nil, err // a packets.Code: flags, QoS, DUP without QoS
	}
	remaining, err := ReadRemainingLength(r)
	if err != nil {
		return pk, nil, err
	}
	if maxSize > 0 && 1+remaining > maxSize {
		return pk, nil, fmt.Errorf("%w: %d bytes, the maximum is %d", ErrTooLarge, remaining, maxSize)
	}
	pk.FixedHeader.Remaining = remaining
	pk.ProtocolVersion = version
	if acquire != nil {
		if err := acquire(remaining); err != nil {
			return pk, nil, err
		}
	}
	body = make([]byte, remaining)
	if _, err := io.ReadFull(r, body); err != nil {
		return pk, nil, noEOF(err)
	}
	return pk, body, nil
}

// noEOF turns an end of stream inside a packet into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Decode decodes a packet body according to pk's fixed header and protocol version. The codec can
// index past the end of a truncated packet; that panic is returned as an ErrMalformed error.
func Decode(pk *packets.Packet, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: truncated %s", ErrMalformed, packets.PacketNames[pk.FixedHeader.Type])
		}
	}()
	switch pk.FixedHeader.Type {
	case packets.Connect:
		return pk.ConnectDecode(body)
	case packets.Connack:
		return pk.ConnackDecode(body)
	case packets.Publish:
		return pk.PublishDecode(body)
	case packets.Puback:
		return pk.PubackDecode(body)
	case packets.Pubrec:
		return pk.PubrecDecode(body)
	case packets.Pubrel:
		return pk.PubrelDecode(body)
	case packets.Pubcomp:
		return pk.PubcompDecode(body)
	case packets.Subscribe:
		return pk.SubscribeDecode(body)
	case packets.Suback:
		return pk.SubackDecode(body)
	case packets.Unsubscribe:
		return pk.UnsubscribeDecode(body)
	case packets.Unsuback:
		return pk.UnsubackDecode(body)
	case packets.Pingreq, packets.Pingresp:
		if len(body) != 0 {
			return fmt.Errorf("%w: %s with a body", ErrMalformed, packets.PacketNames[pk.FixedHeader.Type])
		}
		return nil
	case packets.Disconnect:
		if pk.ProtocolVersion == 5 && len(body) == 1 {
			pk.ReasonCode = body[0] // the codec reads the reason code only when properties follow
			return nil
		}
		return pk.DisconnectDecode(body)
	case packets.Auth:
		return pk.AuthDecode(body)
	}
	return fmt.Errorf("%w: packet type %d", ErrMalformed, pk.FixedHeader.Type)
}

// Encode appends pk to buf, in pk.ProtocolVersion.
func Encode(buf *bytes.Buffer, pk *packets.Packet) error {
	switch typ := pk.FixedHeader.Type; typ {
	case packets.Connect:
		return pk.ConnectEncode(buf)
	case packets.Connack:
		return pk.ConnackEncode(buf)
	case packets.Publish:
		if !hasPublishProperties(pk) {
			return encodePublish(buf, pk)
		}
		return pk.PublishEncode(buf)
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		if !hasAckProperties(pk) {
			// Written here rather than by the codec: it looks every property up in a map on every
			// encode, and writes a reason code only from 0x80 up, so a success code such as 0x10
			// (no matching subscribers) would go out as 0x00.
			encodeAck(buf, typ<<4|pk.FixedHeader.Qos<<1, pk.PacketID, pk.ReasonCode, pk.ProtocolVersion)
			return nil
		}
		return pk.PubackEncode(buf) // one codec encoder serves all four types
	case packets.Subscribe:
		return pk.SubscribeEncode(buf)
	case packets.Suback:
		return pk.SubackEncode(buf)
	case packets.Unsubscribe:
		return pk.UnsubscribeEncode(buf)
	case packets.Unsuback:
		return pk.UnsubackEncode(buf)
	case packets.Pingreq:
		return pk.PingreqEncode(buf)
	case packets.Pingresp:
		return pk.PingrespEncode(buf)
	case packets.Disconnect:
		return pk.DisconnectEncode(buf)
	case packets.Auth:
		return pk.AuthEncode(buf)
	}
	return fmt.Errorf("wire: cannot encode packet type %d", pk.FixedHeader.Type)
}

// hasPublishProperties reports whether a PUBLISH carries any property to encode (5.0).
func hasPublishProperties(pk *packets.Packet) bool {
	p := &pk.Properties
	return pk.ProtocolVersion == 5 && (p.PayloadFormatFlag || p.MessageExpiryInterval != 0 || p.ContentType != "" ||
		p.ResponseTopic != "" || len(p.CorrelationData) > 0 || len(p.SubscriptionIdentifier) > 0 ||
		len(p.User) > 0 || p.TopicAlias != 0)
}

// encodePublish writes a PUBLISH without properties, the common case, without the codec's
// per-property map lookups and intermediate buffers.
func encodePublish(buf *bytes.Buffer, pk *packets.Packet) error {
	return EncodePublish(buf, &Publish{Version: pk.ProtocolVersion, QoS: pk.FixedHeader.Qos, Dup: pk.FixedHeader.Dup,
		Retain: pk.FixedHeader.Retain, PacketID: pk.PacketID, Topic: pk.TopicName, Payload: pk.Payload})
}

// EncodeAck appends a PUBACK, PUBREC, PUBREL or PUBCOMP without properties (typ is its packet
// type); a 5.0 one carries code unless it is 0 (MQTT 5.0 section 3.4.2.1).
func EncodeAck(buf *bytes.Buffer, typ byte, id uint16, code byte, version byte) {
	hb := typ << 4
	if typ == packets.Pubrel {
		hb |= 0x02 // [MQTT-3.6.1-1]
	}
	encodeAck(buf, hb, id, code, version)
}

func encodeAck(buf *bytes.Buffer, hb byte, id uint16, code byte, version byte) {
	if version == 5 && code != 0 {
		buf.Write([]byte{hb, 3, byte(id >> 8), byte(id), code})
	} else {
		buf.Write([]byte{hb, 2, byte(id >> 8), byte(id)})
	}
}

// Publish is a PUBLISH whose only properties, if any, are those below: what a broker mostly
// sends. EncodePublish writes it without the codec.
type Publish struct {
	Version     byte // protocol version: properties are written for 5 only
	QoS         byte
	Dup, Retain bool
	PacketID    uint16
	Topic       string // empty with an alias the client knows
	Payload     []byte

	PayloadFormat    byte // with PayloadFormatSet
	PayloadFormatSet bool
	Expiry           uint32 // Message Expiry Interval in seconds; 0: none
	SubIDs           []int  // Subscription Identifiers; those below 1 are left out
	Alias            uint16 // Topic Alias; 0: none
}

// EncodePublish appends p, with its properties in the order the codec writes them.
func EncodePublish(buf *bytes.Buffer, p *Publish) error {
	if p.QoS > 0 && p.PacketID == 0 {
		return packets.ErrProtocolViolationNoPacketID // [MQTT-2.2.1-3]
	}
	props := 0
	if p.Version == 5 {
		if p.PayloadFormatSet {
			props += 2
		}
		if p.Expiry > 0 {
			props += 5
		}
		for _, id := range p.SubIDs {
			if id > 0 {
				props += 1 + varintLen(id)
			}
		}
		if p.Alias > 0 {
			props += 3
		}
	}
	remaining := 2 + len(p.Topic) + len(p.Payload)
	if p.QoS > 0 {
		remaining += 2
	}
	if p.Version == 5 {
		remaining += varintLen(props) + props
	}
	hb := packets.Publish<<4 | p.QoS<<1
	if p.Dup {
		hb |= 0x08
	}
	if p.Retain {
		hb |= 0x01
	}
	buf.WriteByte(hb)
	writeVarint(buf, remaining)
	buf.WriteByte(byte(len(p.Topic) >> 8))
	buf.WriteByte(byte(len(p.Topic)))
	buf.WriteString(p.Topic)
	if p.QoS > 0 {
		buf.WriteByte(byte(p.PacketID >> 8))
		buf.WriteByte(byte(p.PacketID))
	}
	if p.Version == 5 {
		writeVarint(buf, props)
		if p.PayloadFormatSet {
			buf.Write([]byte{packets.PropPayloadFormat, p.PayloadFormat})
		}
		if p.Expiry > 0 {
			e := p.Expiry
			buf.Write([]byte{packets.PropMessageExpiryInterval, byte(e >> 24), byte(e >> 16), byte(e >> 8), byte(e)})
		}
		for _, id := range p.SubIDs {
			if id > 0 {
				buf.WriteByte(packets.PropSubscriptionIdentifier)
				writeVarint(buf, id)
			}
		}
		if p.Alias > 0 {
			buf.Write([]byte{packets.PropTopicAlias, byte(p.Alias >> 8), byte(p.Alias)})
		}
	}
	buf.Write(p.Payload)
	return nil
}

// writeVarint appends n as a Variable Byte Integer.
func writeVarint(buf *bytes.Buffer, n int) {
	for {
		b := byte(n & 0x7F)
		n >>= 7
		if n > 0 {
			b |= 0x80
		}
		buf.WriteByte(b)
		if n == 0 {
			return
		}
	}
}

// varintLen is the length of n as a Variable Byte Integer.
func varintLen(n int) int {
	l := 1
	for ; n > 127; n >>= 7 {
		l++
	}
	return l
}

func hasAckProperties(pk *packets.Packet) bool {
	return pk.Properties.ReasonString != "" || len(pk.Properties.User) > 0
}
