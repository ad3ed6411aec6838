package mqtt

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/mochi-mqtt/server/v2/packets"
)

// protocolError is a packet the broker must answer by closing the connection, with a 5.0 reason
// code (0x81 malformed, 0x82 protocol error, 0x95 too large...).
type protocolError struct {
	code byte
	msg  string
}

func (e *protocolError) Error() string { return fmt.Sprintf("%s (reason 0x%02X)", e.msg, e.code) }

func malformed(msg string) error         { return &protocolError{code: 0x81, msg: msg} }
func protocolViolation(msg string) error { return &protocolError{code: 0x82, msg: msg} }

// reasonOf extracts the reason code to close with; 0x81 when err is a decode error without one.
func reasonOf(err error) byte {
	var pe *protocolError
	if errors.As(err, &pe) {
		return pe.code
	}
	var code packets.Code
	if errors.As(err, &code) && code.Code >= 0x80 {
		return code.Code
	}
	return 0x81
}

// readRemainingLength reads a Variable Byte Integer and rejects encodings longer than 4 bytes or
// not minimal [MQTT-1.5.5-1] (the codec accepts 80 80 80 80 00 as 0).
func readRemainingLength(r io.ByteReader) (int, error) {
	var n, shift int
	for i := 0; i < 4; i++ {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		if i > 0 && b == 0 {
			return 0, malformed("remaining length not minimally encoded")
		}
		n |= int(b&0x7F) << shift
		if b&0x80 == 0 {
			return n, nil
		}
		shift += 7
	}
	return 0, malformed("remaining length longer than 4 bytes")
}

// readPacket reads and decodes one packet from r.
func readPacket(r *bufio.Reader, version byte, maxSize int) (pk packets.Packet, err error) {
	hb, err := r.ReadByte()
	if err != nil {
		return pk, err
	}
	return readPacketAfter(hb, r, version, maxSize)
}

// readPacketAfter reads the rest of a packet whose first byte hb was already read. maxSize bounds
// the whole packet before anything is allocated for it [MQTT-3.2.2-15]. The body is a fresh buffer
// per packet, so the strings and slices the decoder aliases into it stay valid for as long as the
// broker keeps them.
func readPacketAfter(hb byte, r *bufio.Reader, version byte, maxSize int) (pk packets.Packet, err error) {
	if hb>>4 == packets.Publish && hb&0x06 == 0x06 {
		// Both QoS bits set is a Malformed Packet [MQTT-3.3.1-4]; the codec calls it a protocol
		// error (0x82).
		return pk, malformed("PUBLISH with QoS 3")
	}
	if err := pk.FixedHeader.Decode(hb); err != nil {
		return pk, err
	}
	remaining, err := readRemainingLength(r)
	if err != nil {
		return pk, err
	}
	if maxSize > 0 && 1+remaining > maxSize {
		return pk, &protocolError{code: 0x95, msg: fmt.Sprintf("packet of %d bytes exceeds the maximum of %d", remaining, maxSize)}
	}
	pk.FixedHeader.Remaining = remaining
	pk.ProtocolVersion = version
	body := make([]byte, remaining)
	if _, err := io.ReadFull(r, body); err != nil {
		return pk, err
	}
	if version == 5 || (pk.FixedHeader.Type == packets.Connect && isConnect5(body)) {
		if err := checkProperties(pk.FixedHeader.Type, pk.FixedHeader, body); err != nil {
			return pk, err
		}
	}
	return pk, decodeBody(&pk, body)
}

// isConnect5 reports whether a CONNECT body asks for protocol level 5.
func isConnect5(body []byte) bool {
	if len(body) < 2 {
		return false
	}
	at := 2 + (int(body[0])<<8 | int(body[1]))
	return at < len(body) && body[at] == 5
}

// decodeBody decodes a packet's variable header and payload. The codec can index past the end of a
// truncated packet; such a panic is a malformed packet, not a broker failure.
func decodeBody(pk *packets.Packet, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = malformed(fmt.Sprintf("truncated %s packet", packets.PacketNames[pk.FixedHeader.Type]))
		}
	}()
	switch pk.FixedHeader.Type {
	case packets.Connect:
		return pk.ConnectDecode(body)
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
	case packets.Unsubscribe:
		return pk.UnsubscribeDecode(body)
	case packets.Pingreq:
		if len(body) != 0 {
			return malformed("PINGREQ with a body")
		}
		return nil
	case packets.Disconnect:
		return pk.DisconnectDecode(body)
	case packets.Auth:
		return pk.AuthDecode(body)
	default:
		// CONNACK, SUBACK, UNSUBACK, PINGRESP are server-to-client only; type 0 is reserved.
		return protocolViolation(fmt.Sprintf("packet type %d not accepted from a client", pk.FixedHeader.Type))
	}
}
