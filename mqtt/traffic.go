package mqtt

import (
	"maps"
	"sync"
	"sync/atomic"
)

// traffic counts what went through the broker's connections since start, for Stats. The per
// message counters are atomics indexed by QoS, so counting costs one atomic add each on the
// reader's and the writer's path and no lock.
type traffic struct {
	received, receivedBytes [3]atomic.Uint64 // PUBLISH packets from clients, by QoS, and payload bytes
	sent, sentBytes         [3]atomic.Uint64 // PUBLISH packets written to clients, by QoS, and payload bytes
	accepted                atomic.Uint64    // connections accepted by a listener
	qos0Overflow            atomic.Uint64    // QoS 0 deliveries dropped: a connection's outgoing queue was full

	mu      sync.Mutex            // guards refused; a refusal is rare
	refused map[ReasonCode]uint64 // CONNECTs refused, by CONNACK reason
}

// publishReceived counts a PUBLISH read from a client.
func (t *traffic) publishReceived(qos byte, payload int) {
	t.received[qos&3%3].Add(1)
	t.receivedBytes[qos&3%3].Add(uint64(payload))
}

// publishSent counts a PUBLISH written to a client, a resend included.
func (t *traffic) publishSent(qos byte, payload int) {
	t.sent[qos&3%3].Add(1)
	t.sentBytes[qos&3%3].Add(uint64(payload))
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
	for q := range 3 {
		st.Received[q] = t.received[q].Load()
		st.ReceivedBytes[q] = t.receivedBytes[q].Load()
		st.Sent[q] = t.sent[q].Load()
		st.SentBytes[q] = t.sentBytes[q].Load()
	}
	st.Accepted = t.accepted.Load()
	st.DroppedQoS0Overflow = t.qos0Overflow.Load()
	t.mu.Lock()
	st.Refused = maps.Clone(t.refused)
	t.mu.Unlock()
}
