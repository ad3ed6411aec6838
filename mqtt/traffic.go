package mqtt

import (
	"sync/atomic"

	"github.com/mochi-mqtt/server/v2/packets"
)

// traffic counts what crosses the wire since start, for Stats and $SYS. Counting is a few atomic
// adds per packet read and per socket write, so the hot path pays next to nothing.
type traffic struct {
	packetsIn, packetsOut atomic.Uint64 // MQTT packets of every type
	publishIn, publishOut atomic.Uint64 // PUBLISH packets
	bytesIn, bytesOut     atomic.Uint64 // whole packets, fixed header included
}

// received counts one packet read from a client.
func (t *traffic) received(pk *packets.Packet) {
	t.packetsIn.Add(1)
	if pk.FixedHeader.Type == packets.Publish {
		t.publishIn.Add(1)
	}
	t.bytesIn.Add(uint64(wireSize(pk.FixedHeader.Remaining)))
}

// sent counts one socket write of n bytes holding packets packets, publishes of them PUBLISHes.
func (t *traffic) sent(packets, publishes, n int) {
	t.packetsOut.Add(uint64(packets))
	t.publishOut.Add(uint64(publishes))
	t.bytesOut.Add(uint64(n))
}

// wireSize is the size of a packet whose Remaining Length is remaining: the first byte, the
// variable-length integer, and the rest.
func wireSize(remaining int) int {
	n := 2
	for r := remaining; r > 127; r >>= 7 {
		n++
	}
	return n + remaining
}
