package mqtttest_test

import (
	"bytes"
	"net"
	"reflect"
	"testing"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
	"github.com/oncemq/oncemq/mqtt/mqtttest/fixture"
)

func fixturesByName(t *testing.T) map[string]fixture.Case {
	t.Helper()
	byName := make(map[string]fixture.Case)
	for _, c := range mqtttest.PacketFixtures(t) {
		byName[c.Name] = c
	}
	return byName
}

// ConnectPacket and its options write the bytes of the CONNECT fixtures.
func TestConnectPacketWritesFixtureBytes(t *testing.T) {
	fixtures := fixturesByName(t)
	for name, tc := range map[string]struct {
		version byte
		bytes   func() ([]byte, error)
	}{
		"connect-311-clean-keepalive": {4, func() ([]byte, error) {
			return mqtttest.Encode(mqtttest.ConnectPacket(4, "c1", true, 0, mqtttest.KeepAlive(60)), 4)
		}},
		"connect-5-session-expiry": {5, func() ([]byte, error) {
			return mqtttest.Encode(mqtttest.ConnectPacket(5, "c1", false, 300, mqtttest.ReceiveMaximum(10)), 5)
		}},
		"connect-311-will": {4, func() ([]byte, error) {
			return mqtttest.Encode(mqtttest.ConnectPacket(4, "c1", true, 0, mqtttest.Will("w/t", []byte("bye"), 1, true)), 4)
		}},
		"connect-5-will-delay": {5, func() ([]byte, error) {
			return mqtttest.Encode(mqtttest.ConnectPacket(5, "c1", true, 0, mqtttest.Will("w/t", []byte("bye"), 0, false), mqtttest.WillDelay(5)), 5)
		}},
	} {
		c, ok := fixtures[name]
		if !ok || !c.For(tc.version) {
			t.Errorf("no fixture %q for version %d", name, tc.version)
			continue
		}
		got, err := tc.bytes()
		if err != nil || !bytes.Equal(got, c.Bytes) {
			t.Errorf("%s: built % x, %v; fixture % x", name, got, err, []byte(c.Bytes))
		}
	}
}

// The client reads what a server sends packet by packet, with each packet's raw bytes: every
// accepted server fixture, written back to back on one connection.
func TestClientReadsServerFixtures(t *testing.T) {
	for _, v := range []byte{4, 5} {
		var want []fixture.Case
		var stream []byte
		for _, c := range mqtttest.PacketFixtures(t) {
			if c.From == "server" && c.Reject == nil && c.For(v) {
				want = append(want, c)
				stream = append(stream, c.Bytes...)
			}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = conn.Write(stream)
			_ = conn.Close()
		}()
		c := mqtttest.Dial(t, ln.Addr().String(), v)
		for _, w := range want {
			r, ok := c.Next(mqtttest.ExpectTimeout)
			switch {
			case !ok || r.Err != nil:
				t.Fatalf("v%d: waiting for %s: %v", v, w.Name, r.Err)
			case !bytes.Equal(r.Raw, w.Bytes):
				t.Errorf("v%d %s: raw % x, want % x", v, w.Name, r.Raw, []byte(w.Bytes))
			case !reflect.DeepEqual(fixture.FieldsOf(&r.Packet), *w.Packet):
				t.Errorf("v%d %s: read %+v, want %+v", v, w.Name, fixture.FieldsOf(&r.Packet), *w.Packet)
			}
		}
		c.ExpectClosed(t)
	}
}
