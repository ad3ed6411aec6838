package mqttclient

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/fixture"
)

func TestReadPacketRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	pks := []packets.Packet{
		Publish("a/b", 2, 7, []byte("payload"), true),
		Ack(packets.Pubrec, 7, 0x97),
		Ack(packets.Pubrel, 8, 0),
	}
	for _, pk := range pks {
		if err := Encode(&buf, pk); err != nil {
			t.Fatal(err)
		}
	}
	// CONNACK is server-to-client, which Encode does not do: write it by hand (present, success,
	// no properties), then DISCONNECT 0x8E with no properties (one byte, as brokers send it).
	buf.Write([]byte{0x20, 0x03, 0x01, 0x00, 0x00, 0xE0, 0x01, 0x8E})
	r := bufio.NewReader(&buf)
	want := []string{
		`PUBLISH(topic="a/b" qos=2 id=7 dup=true retain=false payload="payload")`,
		"PUBREC(id=7 rc=0x97)",
		"PUBREL(id=8 rc=0x00)",
		"CONNACK(rc=0x00 sp=true)",
		"DISCONNECT(rc=0x8E)",
	}
	for _, w := range want {
		pk, err := ReadPacket(r)
		if err != nil {
			t.Fatalf("reading %s: %v", w, err)
		}
		if got := Describe(pk); got != w {
			t.Errorf("read %s, want %s", got, w)
		}
	}
	if _, err := ReadPacket(r); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

func TestReadPacketMalformed(t *testing.T) {
	for _, in := range [][]byte{
		{0x30, 0x80, 0x80, 0x80, 0x80, 0x00}, // 5-byte length
		{0x30, 0x80, 0x00},                   // non-minimal length
		{0x10, 0x00},                         // CONNECT: not sent by a server
		{0x30, 0x02, 0x00, 0x05},             // PUBLISH whose topic runs past the end
	} {
		if _, err := ReadPacket(bufio.NewReader(bytes.NewReader(in))); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v, want ErrMalformed", in, err)
		}
	}
	if _, err := ReadPacket(bufio.NewReader(bytes.NewReader([]byte{0x30, 0x05, 0x00}))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated packet: %v, want io.ErrUnexpectedEOF", err)
	}
}

// The builders, encoded by Encode (5.0), write the bytes of the packet fixtures they stand for, and
// ReadPacket reads the 5.0 server fixtures as the fields they pin down.
func TestFixtures(t *testing.T) {
	cases, err := fixture.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]fixture.Case)
	for _, c := range cases {
		byName[c.Name] = c
	}
	for name, pk := range map[string]packets.Packet{
		"publish-5-qos2-dup":                    Publish("a", 2, 7, []byte("hi"), true),
		"pubrec-5-quota-exceeded":               Ack(packets.Pubrec, 7, 0x97),
		"pubrel":                                Ack(packets.Pubrel, 7, 0),
		"pubcomp-5-packet-identifier-not-found": Ack(packets.Pubcomp, 7, 0x92),
		"subscribe-5":                           Subscribe(1, "#", 2),
		"disconnect-5-with-will":                Disconnect(0x04),
	} {
		var buf bytes.Buffer
		if err := Encode(&buf, pk); err != nil || !bytes.Equal(buf.Bytes(), byName[name].Bytes) {
			t.Errorf("%s: built % x, %v; fixture % x", name, buf.Bytes(), err, []byte(byName[name].Bytes))
		}
	}
	read := 0
	for _, c := range cases {
		if c.From != "server" || c.Reject != nil || !c.For(Version) {
			continue
		}
		pk, err := ReadPacket(bufio.NewReader(bytes.NewReader(c.Bytes)))
		if err != nil || !reflect.DeepEqual(fixture.FieldsOf(&pk), *c.Packet) {
			t.Errorf("%s: read %+v, %v; want %+v", c.Name, fixture.FieldsOf(&pk), err, *c.Packet)
		}
		read++
	}
	if read == 0 {
		t.Error("no 5.0 server fixture")
	}
}
