package mqtt

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/mqtt/internal/wire"
	"github.com/oncemq/oncemq/session/reason"
)

// protocolError is a packet the broker must answer by closing the connection, with a 5.0 reason
// code (0x81 malformed, 0x82 protocol error, 0x95 too large...).
type protocolError struct {
	code reason.Code
	msg  string
}

func (e *protocolError) Error() string { return fmt.Sprintf("%s (reason 0x%02X)", e.msg, byte(e.code)) }

func malformed(msg string) error { return &protocolError{code: reason.MalformedPacket, msg: msg} }
func protocolViolation(msg string) error {
	return &protocolError{code: reason.ProtocolError, msg: msg}
}

// reasonOf extracts the reason code to close with: Malformed Packet when err is a decode error
// without one.
func reasonOf(err error) reason.Code {
	var pe *protocolError
	if errors.As(err, &pe) {
		return pe.code
	}
	var code packets.Code
	if errors.As(err, &code) && code.Code >= 0x80 {
		return reason.Code(code.Code)
	}
	return reason.MalformedPacket
}

// readPacket reads and decodes one packet from r.
func readPacket(r *bufio.Reader, version byte, maxSize int) (pk packets.Packet, err error) {
	hb, err := r.ReadByte()
	if err != nil {
		return pk, err
	}
	return readPacketAfter(hb, r, version, maxSize, nil)
}

// readPacketAfter reads the rest of a packet whose first byte hb was already read. maxSize bounds
// the whole packet before anything is allocated for it [MQTT-3.2.2-15]. The body is a fresh buffer
// per packet, so the strings and slices the decoder aliases into it stay valid for as long as the
// broker keeps them.
//
// acquire, if not nil, is asked for the body's bytes before they are allocated (see readBudget).
func readPacketAfter(hb byte, r *bufio.Reader, version byte, maxSize int, acquire func(int) error) (packets.Packet, error) {
	if hb>>4 == packets.Publish && hb&0x06 == 0x06 {
		// Both QoS bits set is a Malformed Packet [MQTT-3.3.1-4]; the codec calls it a protocol
		// error (0x82).
		return packets.Packet{}, malformed("PUBLISH with QoS 3")
	}
	if pk, ok := readShortAck(hb, r, version, maxSize); ok {
		return pk, nil
	}
	pk, body, err := wire.ReadFrameWith(hb, r, version, maxSize, acquire)
	if errors.Is(err, wire.ErrTooLarge) {
		return pk, &protocolError{code: reason.PacketTooLarge, msg: err.Error()}
	}
	if err != nil {
		return pk, err
	}
	return pk, checkAndDecode(&pk, body, version)
}

// checkAndDecode checks a 5.0 packet's property blocks, which the codec cannot, then decodes it.
func checkAndDecode(pk *packets.Packet, body []byte, version byte) error {
	if version == 5 {
		if err := checkProperties(pk.FixedHeader.Type, pk.FixedHeader, body); err != nil {
			return err
		}
	}
	return decodeBody(pk, body)
}

// connectLevel returns the protocol level a CONNECT body asks for, if its protocol name is one
// of MQTT's ("MQTT", or "MQIsdp" for 3.1).
func connectLevel(body []byte) (byte, bool) {
	if len(body) < 2 {
		return 0, false
	}
	n := int(body[0])<<8 | int(body[1])
	if len(body) < 2+n+1 {
		return 0, false
	}
	if name := string(body[2 : 2+n]); name != "MQTT" && name != "MQIsdp" {
		return 0, false
	}
	return body[2+n], true
}

// decodeBody decodes a packet a client may send; server-to-client types are a protocol error.
func decodeBody(pk *packets.Packet, body []byte) error {
	if wire.FromClient(pk.FixedHeader.Type) {
		return wire.Decode(pk, body)
	}
	// CONNACK, SUBACK, UNSUBACK, PINGRESP are server-to-client only; type 0 is reserved.
	return protocolViolation(fmt.Sprintf("packet type %d not accepted from a client", pk.FixedHeader.Type))
}

// readShortAck reads a PUBACK, PUBREC, PUBREL or PUBCOMP without properties that is whole in r's
// buffer, without allocating a body for it: two of them come in for every QoS 2 message. It
// decodes as the codec does (a 3.1.1 packet's extra byte is ignored there too). ok is false for
// anything else, which is left unread for the general path, which also reports every error.
func readShortAck(hb byte, r *bufio.Reader, version byte, maxSize int) (pk packets.Packet, ok bool) {
	typ := hb >> 4
	if typ < packets.Puback || typ > packets.Pubcomp || r.Buffered() < 3 {
		return pk, false
	}
	b, _ := r.Peek(min(r.Buffered(), 4))
	n := int(b[0]) // a Remaining Length of 2 or 3 is one byte
	if n != 2 && n != 3 || len(b) < 1+n || maxSize > 0 && 1+n > maxSize {
		return pk, false
	}
	if err := pk.FixedHeader.Decode(hb); err != nil {
		return packets.Packet{}, false
	}
	pk.FixedHeader.Remaining = n
	pk.ProtocolVersion = version
	pk.PacketID = uint16(b[1])<<8 | uint16(b[2])
	if version == 5 && n == 3 {
		pk.ReasonCode = b[3]
	}
	_, _ = r.Discard(1 + n)
	return pk, true
}
