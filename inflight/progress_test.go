package inflight

import (
	"strings"
	"testing"
	"time"
)

// The progress log of a long read comes every period, with the count, the rate and the time left;
// a read that ends within the period logs nothing and never counts the total.
func TestProgressReportsEveryPeriod(t *testing.T) {
	var logs logBuffer
	clock := time.Unix(1000, 0)
	totals := 0
	p := newProgress(testLogger(&logs), func() time.Time { return clock }, 5*time.Second,
		func() int { totals++; return 10240 })
	for range 2048 {
		p.step()
	}
	if logs.String() != "" || totals != 0 {
		t.Fatalf("logged before the period: %q (total asked %d times)", logs.String(), totals)
	}
	clock = clock.Add(5 * time.Second)
	for range 1024 {
		p.step()
	}
	// 3072 records in 5 s: 614 a second, 7168 left, about 12 s.
	line := logs.String()
	for _, want := range []string{"records=3072", "total=10240", "per_second=614", "remaining=12s"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %s", line, want)
		}
	}
	clock = clock.Add(time.Second)
	for range 1024 {
		p.step()
	}
	if n := strings.Count(logs.String(), "reading the data file"); n != 1 || totals != 1 {
		t.Errorf("%d lines, total asked %d times; want 1 and 1 within one period", n, totals)
	}
}
