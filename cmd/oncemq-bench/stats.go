package main

import (
	"encoding/binary"
	"math"
	"slices"
	"time"
)

// headerSize is the smallest payload: what every message carries before its padding.
//
//	bytes 0-1   run tag (messages of another run are counted as invalid)
//	bytes 2-3   publisher id
//	bytes 4-7   sequence number within the publisher
//	bytes 8-15  send time, nanoseconds since the run's epoch (same process, monotonic clock)
const headerSize = 16

// msgHeader is the identity and send time of one message.
type msgHeader struct {
	Tag  uint16
	Pub  uint16
	Seq  uint32
	Sent int64 // ns since the epoch
}

// encodePayload writes h at the start of a payload of size bytes (size >= headerSize); the rest
// is padding.
func encodePayload(h msgHeader, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint16(b[0:], h.Tag)
	binary.BigEndian.PutUint16(b[2:], h.Pub)
	binary.BigEndian.PutUint32(b[4:], h.Seq)
	binary.BigEndian.PutUint64(b[8:], uint64(h.Sent))
	for i := headerSize; i < size; i++ {
		b[i] = 'x'
	}
	return b
}

// decodePayload reads the header of a payload; ok is false if it is too short.
func decodePayload(b []byte) (h msgHeader, ok bool) {
	if len(b) < headerSize {
		return h, false
	}
	return msgHeader{
		Tag:  binary.BigEndian.Uint16(b[0:]),
		Pub:  binary.BigEndian.Uint16(b[2:]),
		Seq:  binary.BigEndian.Uint32(b[4:]),
		Sent: int64(binary.BigEndian.Uint64(b[8:])),
	}, true
}

// tally counts, for one subscriber, how often each (publisher, sequence) was delivered.
type tally struct {
	counts [][]uint16 // [publisher][sequence]
}

func newTally(pubs int) *tally { return &tally{counts: make([][]uint16, pubs)} }

// add records one delivery and returns how many times that message has now been seen.
// pub must be below the number of publishers.
func (t *tally) add(pub uint16, seq uint32) uint16 {
	c := t.counts[pub]
	if int(seq) >= len(c) {
		c = append(c, make([]uint16, int(seq)+1-len(c))...)
		t.counts[pub] = c
	}
	if c[seq] < 1<<16-1 {
		c[seq]++
	}
	return c[seq]
}

// deliveryCount sums deliveries against what was expected.
type deliveryCount struct {
	Expected   int64 // messages that should have arrived (acknowledged publishes, per subscriber)
	Received   int64 // deliveries of expected messages, duplicates included
	Distinct   int64 // expected messages that arrived at least once
	Unexpected int64 // deliveries of messages whose publish failed or was never made
}

// Lost is how many expected messages never arrived.
func (d deliveryCount) Lost() int64 { return d.Expected - d.Distinct }

// Duplicates is how many deliveries were repeats of one already received.
func (d deliveryCount) Duplicates() int64 { return d.Received - d.Distinct }

func (d *deliveryCount) addCount(o deliveryCount) {
	d.Expected += o.Expected
	d.Received += o.Received
	d.Distinct += o.Distinct
	d.Unexpected += o.Unexpected
}

// countDeliveries compares one subscriber's counts for one publisher with what the publisher did:
// it attempted sequences 0..sent-1, and those in failed were not acknowledged.
func countDeliveries(counts []uint16, sent int, failed map[uint32]bool) deliveryCount {
	var d deliveryCount
	for seq := range max(sent, len(counts)) {
		var n int64
		if seq < len(counts) {
			n = int64(counts[seq])
		}
		if seq >= sent || failed[uint32(seq)] {
			d.Unexpected += n
			continue
		}
		d.Expected++
		d.Received += n
		if n > 0 {
			d.Distinct++
		}
	}
	return d
}

// Latency is a summary of publish-to-delivery times, in milliseconds.
type Latency struct {
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// summarize sorts samples (nanoseconds) in place and returns their percentiles.
func summarize(samples []int64) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	ms := func(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }
	return Latency{
		P50: ms(percentile(samples, 50)),
		P90: ms(percentile(samples, 90)),
		P99: ms(percentile(samples, 99)),
		Max: ms(samples[len(samples)-1]),
	}
}

// percentile returns the nearest-rank p-th percentile of sorted samples: the smallest sample
// that at least p% of the samples are less than or equal to.
func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted))/100 - 1e-9)) // the epsilon absorbs float error
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
