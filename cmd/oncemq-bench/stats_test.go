package main

import (
	"testing"
)

func TestPercentileNearestRank(t *testing.T) {
	sorted := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	tests := []struct {
		p    float64
		want int64
	}{
		{0, 10}, // rank clamps to 1
		{10, 10},
		{11, 20},
		{50, 50},
		{90, 90},
		{99, 100},
		{100, 100},
	}
	for _, tt := range tests {
		if got := percentile(sorted, tt.p); got != tt.want {
			t.Errorf("percentile(%v) = %d, want %d", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %d, want 0", got)
	}
}

func TestPercentileNoFloatDrift(t *testing.T) {
	// 0.99*200 is 198.00000000000003 in floating point: the 99th percentile is still rank 198.
	s := make([]int64, 200)
	for i := range s {
		s[i] = int64(i + 1)
	}
	if got := percentile(s, 99); got != 198 {
		t.Errorf("p99 of 1..200 = %d, want 198", got)
	}
}

func TestSummarize(t *testing.T) {
	var samples []int64
	for i := 100; i >= 1; i-- { // unsorted on purpose
		samples = append(samples, int64(i)*1_000_000) // i ms
	}
	got := summarize(samples)
	want := Latency{P50: 50, P90: 90, P99: 99, Max: 100}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if (summarize(nil) != Latency{}) {
		t.Error("summarize(nil) is not zero")
	}
}

func TestCountDeliveries(t *testing.T) {
	tests := []struct {
		name   string
		counts []uint16
		sent   int
		failed map[uint32]bool
		want   deliveryCount
		lost   int64
		dup    int64
	}{
		{
			name: "all once", counts: []uint16{1, 1, 1, 1}, sent: 4,
			want: deliveryCount{Expected: 4, Received: 4, Distinct: 4},
		},
		{
			name: "one lost at the end (counts shorter than sent)", counts: []uint16{1, 1, 1}, sent: 4,
			want: deliveryCount{Expected: 4, Received: 3, Distinct: 3}, lost: 1,
		},
		{
			name: "one lost in the middle, one twice, one three times", counts: []uint16{1, 0, 2, 3}, sent: 4,
			want: deliveryCount{Expected: 4, Received: 6, Distinct: 3}, lost: 1, dup: 3,
		},
		{
			name: "failed publish neither expected nor lost", counts: []uint16{1, 0, 1}, sent: 3, failed: map[uint32]bool{1: true},
			want: deliveryCount{Expected: 2, Received: 2, Distinct: 2},
		},
		{
			name: "failed publish delivered anyway is unexpected", counts: []uint16{1, 1}, sent: 2, failed: map[uint32]bool{1: true},
			want: deliveryCount{Expected: 1, Received: 1, Distinct: 1, Unexpected: 1},
		},
		{
			name: "delivery beyond what was sent is unexpected", counts: []uint16{1, 1, 0, 1}, sent: 2,
			want: deliveryCount{Expected: 2, Received: 2, Distinct: 2, Unexpected: 1},
		},
		{
			name: "nothing received", counts: nil, sent: 3,
			want: deliveryCount{Expected: 3}, lost: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := countDeliveries(tt.counts, tt.sent, tt.failed)
			if got != tt.want {
				t.Errorf("countDeliveries = %+v, want %+v", got, tt.want)
			}
			if got.Lost() != tt.lost || got.Duplicates() != tt.dup {
				t.Errorf("lost %d dup %d, want lost %d dup %d", got.Lost(), got.Duplicates(), tt.lost, tt.dup)
			}
		})
	}
}

func TestTallyAndTotals(t *testing.T) {
	// Two subscribers, two publishers each sending 3: subscriber 0 sees everything once,
	// subscriber 1 misses (1,2) and sees (0,0) twice.
	ta, tb := newTally(2), newTally(2)
	for pub := range uint16(2) {
		for seq := range uint32(3) {
			ta.add(pub, seq)
			if pub != 1 || seq != 2 {
				tb.add(pub, seq)
			}
		}
	}
	if n := tb.add(0, 0); n != 2 {
		t.Fatalf("second delivery counted %d, want 2", n)
	}
	var total deliveryCount
	for _, tl := range []*tally{ta, tb} {
		for pub := range 2 {
			total.addCount(countDeliveries(tl.counts[pub], 3, nil))
		}
	}
	if total.Expected != 12 || total.Lost() != 1 || total.Duplicates() != 1 {
		t.Errorf("expected %d lost %d dup %d, want 12, 1, 1", total.Expected, total.Lost(), total.Duplicates())
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	h := msgHeader{Tag: 0xbeef, Pub: 7, Seq: 123456, Sent: 987654321012}
	for _, size := range []int{headerSize, 4096} {
		b := encodePayload(h, size)
		if len(b) != size {
			t.Fatalf("payload is %d bytes, want %d", len(b), size)
		}
		got, ok := decodePayload(b)
		if !ok || got != h {
			t.Errorf("size %d: decoded %+v %v, want %+v", size, got, ok, h)
		}
	}
	if _, ok := decodePayload(make([]byte, headerSize-1)); ok {
		t.Error("a short payload decoded")
	}
}

func TestPerPublisher(t *testing.T) {
	total := 0
	for i := range 3 {
		total += perPublisher(10, 3, i)
	}
	if total != 10 || perPublisher(10, 3, 0) != 4 || perPublisher(10, 3, 2) != 3 {
		t.Errorf("perPublisher(10, 3, *) = %d %d %d", perPublisher(10, 3, 0), perPublisher(10, 3, 1), perPublisher(10, 3, 2))
	}
}
