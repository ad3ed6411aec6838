package mqtttest

import (
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/fixture"
)

// PacketFixtures loads the packet fixtures of testdata/packets (see package fixture), failing t if
// they cannot be read.
func PacketFixtures(t testing.TB) []fixture.Case {
	t.Helper()
	cases, err := fixture.LoadAll()
	if err != nil {
		t.Fatalf("mqtttest: %v", err)
	}
	return cases
}

// RejectedFixtures are the rejected fixtures a client sends in protocol version: CONNECTs, which a
// broker must refuse as the first packet, when connect is true, and every other packet, which it
// must refuse on a connection already open, when connect is false.
func RejectedFixtures(t testing.TB, version byte, connect bool) []fixture.Case {
	t.Helper()
	var out []fixture.Case
	for _, c := range PacketFixtures(t) {
		if c.Reject != nil && c.From == "client" && c.For(version) && (c.Bytes[0]>>4 == packets.Connect) == connect {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatalf("mqtttest: no rejected fixture for version %d (connect %t)", version, connect)
	}
	return out
}
