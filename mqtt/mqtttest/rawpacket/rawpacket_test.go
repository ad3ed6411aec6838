package rawpacket

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/internal/wire"
	"github.com/oncemq/oncemq/mqtt/mqtttest/fixture"
)

// loadFixtures returns the packet fixtures of testdata/packets by name.
func loadFixtures(t *testing.T) map[string]fixture.Case {
	t.Helper()
	cases, err := fixture.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]fixture.Case, len(cases))
	for _, c := range cases {
		byName[c.Name] = c
	}
	return byName
}

// The builders write the bytes of the packet fixtures they stand for.
func TestBuildersWriteFixtureBytes(t *testing.T) {
	fixtures := loadFixtures(t)
	for _, tc := range []struct {
		fixture string
		version byte
		pk      packets.Packet
	}{
		{"connect-311-clean-keepalive", 4, Connect(4, ConnectOptions{ClientID: "c1", CleanStart: true, KeepAlive: 60})},
		{"connect-5-session-expiry", 5, Connect(5, ConnectOptions{ClientID: "c1", SessionExpiry: 300, ReceiveMaximum: 10})},
		{"publish-311-qos0", 4, Publish("a", 0, 0, []byte("hi"), false)},
		{"publish-5-qos0", 5, Publish("a", 0, 0, []byte("hi"), false)},
		{"publish-5-qos2-dup", 5, Publish("a", 2, 7, []byte("hi"), true)},
		{"publish-5-qos1-empty-payload", 5, Publish("a", 1, 7, nil, false)},
		{"puback", 4, Ack(packets.Puback, 7, 0)},
		{"puback", 5, Ack(packets.Puback, 7, 0)},
		{"pubrec", 5, Ack(packets.Pubrec, 7, 0)},
		{"pubrec-5-quota-exceeded", 5, Ack(packets.Pubrec, 7, 0x97)},
		{"pubrel", 4, Ack(packets.Pubrel, 7, 0)},
		{"pubrel", 5, Ack(packets.Pubrel, 7, 0)},
		{"pubcomp", 5, Ack(packets.Pubcomp, 7, 0)},
		{"pubcomp-5-packet-identifier-not-found", 5, Ack(packets.Pubcomp, 7, 0x92)},
		{"subscribe-311", 4, Subscribe(1, "#", 2)},
		{"subscribe-5", 5, Subscribe(1, "#", 2)},
		{"pingreq", 5, Pingreq()},
		{"disconnect-311", 4, Disconnect(0)},
		{"disconnect-5", 5, Disconnect(0)},
		{"disconnect-5-with-will", 5, Disconnect(0x04)},
	} {
		c, ok := fixtures[tc.fixture]
		if !ok {
			t.Errorf("no fixture %q", tc.fixture)
			continue
		}
		if !c.For(tc.version) {
			t.Errorf("fixture %q is not for version %d", tc.fixture, tc.version)
			continue
		}
		got, err := Encode(tc.pk, tc.version)
		if err != nil || !bytes.Equal(got, c.Bytes) {
			t.Errorf("%s v%d: built % x, %v; fixture % x", tc.fixture, tc.version, got, err, []byte(c.Bytes))
		}
	}
}

// ReadFromServer reads every fixture of a type a server may send, and that the codec accepts, as
// the fields it pins down, keeping the bytes read; it refuses every packet only a client sends and
// every frame or body the codec refuses.
func TestReadFromServerFixtures(t *testing.T) {
	for _, c := range loadFixtures(t) {
		for _, v := range c.Versions() {
			var raw []byte
			pk, err := ReadFromServer(bufio.NewReader(bytes.NewReader(c.Bytes)), v, 0, &raw)
			switch {
			case c.Reject != nil && c.Reject.Layer != fixture.LayerBroker, !wire.FromServer(c.Bytes[0] >> 4):
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("%s v%d: %v, want ErrMalformed", c.Name, v, err)
				}
			case err != nil:
				t.Errorf("%s v%d: %v", c.Name, v, err)
			case c.Packet != nil && !reflect.DeepEqual(fixture.FieldsOf(&pk), *c.Packet):
				t.Errorf("%s v%d: read %+v, want %+v", c.Name, v, fixture.FieldsOf(&pk), *c.Packet)
			case !bytes.Equal(raw, c.Bytes):
				t.Errorf("%s v%d: raw % x, want % x", c.Name, v, raw, []byte(c.Bytes))
			}
		}
	}
}

// The end of the stream between packets is io.EOF, inside one io.ErrUnexpectedEOF; neither is
// ErrMalformed, so a reader can tell a closed connection from a broken broker.
func TestReadFromServerEndOfStream(t *testing.T) {
	if _, err := ReadFromServer(bufio.NewReader(bytes.NewReader(nil)), 5, 0, nil); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
	for _, cut := range [][]byte{{0x30}, {0x30, 0x05, 0x00}, {0x30, 0x80}} {
		_, err := ReadFromServer(bufio.NewReader(bytes.NewReader(cut)), 5, 0, nil)
		if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}

// A packet over maxSize is refused before its body is read.
func TestReadFromServerTooLarge(t *testing.T) {
	_, err := ReadFromServer(bufio.NewReader(bytes.NewReader([]byte{0x30, 0xFF, 0xFF, 0xFF, 0x7F})), 5, 1024, nil)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want ErrMalformed", err)
	}
}
