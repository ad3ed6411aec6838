package wire

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/fixture"
)

// Every packet fixture of testdata/packets, in each version it applies to: an accepted one decodes
// to its fields and, unless marked decode-only, encodes back to its bytes; a rejected one fails at
// the layer it names, and one the codec lets through (layer "broker") decodes to what its sender
// meant, for the broker to refuse.
func TestPacketFixtures(t *testing.T) {
	cases, err := fixture.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		for _, v := range c.Versions() {
			t.Run(fmt.Sprintf("%s/v%d", c.Title(), v), func(t *testing.T) {
				if c.Reject != nil {
					checkRejected(t, &c, v)
					return
				}
				checkDecodes(t, &c, v)
				if !c.DecodeOnly {
					checkEncodes(t, &c, v)
				}
			})
		}
	}
}

// readFixture reads c's bytes as one frame and decodes it. frameErr is ReadFrame's error; a frame
// that does not use up exactly the bytes fails t.
func readFixture(t *testing.T, c *fixture.Case, v byte) (pk packets.Packet, frameErr, decodeErr error) {
	t.Helper()
	src := bytes.NewReader(c.Bytes)
	r := bufio.NewReader(src)
	hb, _ := r.ReadByte()
	pk, body, frameErr := ReadFrame(hb, r, v, 0)
	if frameErr != nil {
		return pk, frameErr, nil
	}
	if rest := r.Buffered() + src.Len(); rest != 0 {
		t.Fatalf("% x: the frame ends %d bytes before the fixture", c.Bytes, rest)
	}
	return pk, nil, Decode(&pk, body)
}

func checkDecodes(t *testing.T, c *fixture.Case, v byte) {
	t.Helper()
	pk, frameErr, decodeErr := readFixture(t, c, v)
	if frameErr != nil || decodeErr != nil {
		t.Fatalf("% x: frame %v, decode %v", c.Bytes, frameErr, decodeErr)
	}
	if got := fixture.FieldsOf(&pk); !reflect.DeepEqual(got, *c.Packet) {
		t.Fatalf("% x decodes to\n%+v\nwant\n%+v", c.Bytes, got, *c.Packet)
	}
}

func checkEncodes(t *testing.T, c *fixture.Case, v byte) {
	t.Helper()
	pk, err := c.Packet.Packet(v)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, &pk); err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !bytes.Equal(buf.Bytes(), c.Bytes) {
		t.Fatalf("encodes to % x, want % x", buf.Bytes(), []byte(c.Bytes))
	}
}

func checkRejected(t *testing.T, c *fixture.Case, v byte) {
	t.Helper()
	pk, frameErr, decodeErr := readFixture(t, c, v)
	switch c.Reject.Layer {
	case fixture.LayerFrame:
		if frameErr == nil {
			t.Fatalf("% x: ReadFrame accepted it (decode: %v), want it refused", c.Bytes, decodeErr)
		}
	case fixture.LayerDecode:
		if frameErr != nil || decodeErr == nil {
			t.Fatalf("% x: frame %v, decode %v; want the frame read and the decoder to refuse it", c.Bytes, frameErr, decodeErr)
		}
	case fixture.LayerBroker:
		if frameErr != nil || decodeErr != nil {
			t.Fatalf("% x: frame %v, decode %v; want the codec to let it through to the broker's checks", c.Bytes, frameErr, decodeErr)
		}
		if c.Packet == nil {
			return
		}
		if got := fixture.FieldsOf(&pk); !reflect.DeepEqual(got, *c.Packet) {
			t.Fatalf("% x decodes to\n%+v\nwant\n%+v", c.Bytes, got, *c.Packet)
		}
	}
}
