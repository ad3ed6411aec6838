package mqtt

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/mochi-mqtt/server/v2/packets"
)

// traffic counts what crosses the wire since start, for Stats, $SYS and the metrics. Counting is a
// few atomic adds per packet read and per socket write, so the hot path pays next to nothing.
type traffic struct {
	packetsIn, packetsOut atomic.Uint64 // MQTT packets of every type
	publishIn, publishOut atomic.Uint64 // PUBLISH packets
	bytesIn, bytesOut     atomic.Uint64 // whole packets, fixed header included

	byQoSIn, payloadIn   [3]atomic.Uint64 // PUBLISH packets from clients by QoS, and their payload bytes
	byQoSOut, payloadOut [3]atomic.Uint64 // PUBLISH packets written to clients by QoS (resends included), payload bytes
	accepted             atomic.Uint64    // connections accepted by a listener
	qos0Overflow         atomic.Uint64    // QoS 0 deliveries dropped: a connection's outgoing queue was full

	mu      sync.Mutex            // guards refused; a refusal is rare
	refused map[ReasonCode]uint64 // CONNECTs refused, by CONNACK reason
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

// publishReceived counts a PUBLISH read from a client, by QoS.
func (t *traffic) publishReceived(qos byte, payload int) {
	t.byQoSIn[qos%3].Add(1)
	t.payloadIn[qos%3].Add(uint64(payload))
}

// publishSent counts a PUBLISH written to a client, a resend included, by QoS.
func (t *traffic) publishSent(qos byte, payload int) {
	t.byQoSOut[qos%3].Add(1)
	t.payloadOut[qos%3].Add(uint64(payload))
}

// connectRefused counts a CONNECT answered with a failure code.
func (t *traffic) connectRefused(code ReasonCode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refused == nil {
		t.refused = make(map[ReasonCode]uint64)
	}
	t.refused[code]++
}

// fill copies the counters into st.
func (t *traffic) fill(st *Stats) {
	st.PacketsReceived, st.PacketsSent = t.packetsIn.Load(), t.packetsOut.Load()
	st.PublishReceived, st.PublishSent = t.publishIn.Load(), t.publishOut.Load()
	st.BytesReceived, st.BytesSent = t.bytesIn.Load(), t.bytesOut.Load()
	for q := range 3 {
		st.Received[q] = t.byQoSIn[q].Load()
		st.ReceivedBytes[q] = t.payloadIn[q].Load()
		st.Sent[q] = t.byQoSOut[q].Load()
		st.SentBytes[q] = t.payloadOut[q].Load()
	}
	st.Accepted = t.accepted.Load()
	st.DroppedQoS0 = t.qos0Overflow.Load()
	t.mu.Lock()
	st.Refused = maps.Clone(t.refused)
	t.mu.Unlock()
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
