package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

func read(t *testing.T, b []byte, version byte, max int) (packets.Packet, error) {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	hb, err := r.ReadByte()
	if err != nil {
		t.Fatal(err)
	}
	pk, body, err := ReadFrame(hb, r, version, max)
	if err != nil {
		return pk, err
	}
	return pk, Decode(&pk, body)
}

// [MQTT-1.5.5-1]: a Remaining Length must be minimal and at most 4 bytes.
func TestReadRemainingLength_MQTT_1_5_5_1(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want int
		bad  bool
	}{
		{in: []byte{0x00}, want: 0},
		{in: []byte{0x7F}, want: 127},
		{in: []byte{0x80, 0x01}, want: 128},
		{in: []byte{0xFF, 0xFF, 0xFF, 0x7F}, want: 268_435_455},
		{in: []byte{0x80, 0x00}, bad: true},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x00}, bad: true},
		{in: []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x01}, bad: true},
	} {
		n, err := ReadRemainingLength(bytes.NewReader(tc.in))
		if tc.bad != errors.Is(err, ErrMalformed) || (!tc.bad && n != tc.want) {
			t.Errorf("% x: got %d, %v; want %d, malformed %v", tc.in, n, err, tc.want, tc.bad)
		}
	}
	if _, err := ReadRemainingLength(bytes.NewReader([]byte{0x80})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut length: %v, want io.ErrUnexpectedEOF", err)
	}
}

// [MQTT-3.2.2-15]: the size bound is checked before the body is read.
func TestReadFrameTooLarge(t *testing.T) {
	_, err := read(t, []byte{0x30, 0xFF, 0xFF, 0xFF, 0x7F}, 5, 1024)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

// A truncated packet that makes the codec index past its end is an error, not a panic.
func TestDecodeTruncatedIsMalformed(t *testing.T) {
	// SUBSCRIBE 5.0: id 1, no properties, filter "a", and the options byte missing.
	_, err := read(t, []byte{0x82, 0x06, 0, 1, 0, 0, 1, 'a'}, 5, 0)
	if err == nil {
		t.Fatal("a SUBSCRIBE without its options byte decoded")
	}
}

// The codec drops a 5.0 DISCONNECT's reason code when no properties follow; 0x04 (with will) must
// survive [MQTT-3.14.2-1].
func TestDecodeDisconnectReasonWithoutProperties(t *testing.T) {
	pk, err := read(t, []byte{0xE0, 0x01, 0x04}, 5, 0)
	if err != nil || pk.ReasonCode != 0x04 {
		t.Fatalf("got reason 0x%02X, %v; want 0x04", pk.ReasonCode, err)
	}
}

// Success reason codes below 0x80 on PUBACK and PUBREC reach the wire in 5.0, and PUBREL keeps its
// fixed header 0x62 [MQTT-3.6.1-1]; 3.1.1 acks are 4 bytes.
func TestEncodeAckReasonCodes(t *testing.T) {
	for _, tc := range []struct {
		pk   packets.Packet
		want []byte
	}{
		{packets.Packet{ProtocolVersion: 5, FixedHeader: packets.FixedHeader{Type: packets.Pubrec}, PacketID: 7, ReasonCode: 0x10}, []byte{0x50, 3, 0, 7, 0x10}},
		{packets.Packet{ProtocolVersion: 5, FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 7, ReasonCode: 0x00}, []byte{0x40, 2, 0, 7}},
		{packets.Packet{ProtocolVersion: 5, FixedHeader: packets.FixedHeader{Type: packets.Pubcomp}, PacketID: 7, ReasonCode: 0x92}, []byte{0x70, 3, 0, 7, 0x92}},
		{packets.Packet{ProtocolVersion: 5, FixedHeader: packets.FixedHeader{Type: packets.Pubrel, Qos: 1}, PacketID: 7, ReasonCode: 0}, []byte{0x62, 2, 0, 7}},
		{packets.Packet{ProtocolVersion: 4, FixedHeader: packets.FixedHeader{Type: packets.Pubrec}, PacketID: 7, ReasonCode: 0x10}, []byte{0x50, 2, 0, 7}},
	} {
		var buf bytes.Buffer
		if err := Encode(&buf, &tc.pk); err != nil || !bytes.Equal(buf.Bytes(), tc.want) {
			t.Errorf("%s 0x%02X v%d: got % x, %v; want % x", packets.PacketNames[tc.pk.FixedHeader.Type], tc.pk.ReasonCode, tc.pk.ProtocolVersion, buf.Bytes(), err, tc.want)
		}
	}
}

func TestDirections(t *testing.T) {
	if FromClient(packets.Connack) || !FromClient(packets.Connect) || FromServer(packets.Subscribe) || !FromServer(packets.Suback) {
		t.Fatal("packet directions wrong")
	}
}

// The PUBLISH written without the codec is byte for byte what the codec writes.
func TestEncodePublishMatchesCodec(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 300)
	for _, v := range []byte{4, 5} {
		for _, qos := range []byte{0, 1, 2} {
			for _, payload := range [][]byte{nil, []byte("hello"), big} {
				pk := packets.Packet{ProtocolVersion: v, TopicName: "a/b", Payload: payload, PacketID: 0,
					FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos, Dup: qos > 0, Retain: true}}
				if qos > 0 {
					pk.PacketID = 513
				}
				var ours, codec bytes.Buffer
				if err := Encode(&ours, &pk); err != nil {
					t.Fatal(err)
				}
				cp := pk
				if err := cp.PublishEncode(&codec); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(ours.Bytes(), codec.Bytes()) {
					t.Errorf("v%d qos%d %d bytes: ours % x, codec % x", v, qos, len(payload), ours.Bytes()[:8], codec.Bytes()[:8])
				}
			}
		}
	}
}
