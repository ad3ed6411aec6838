package inflight

import (
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"
)

// progressEvery is how often a long recovery logs how far it got.
const progressEvery = 5 * time.Second

// progress logs how far a long read of the file got: records read, the rate, and an estimate of
// the time left. A recovery shorter than its period logs nothing and never counts the total.
type progress struct {
	log   *slog.Logger
	now   func() time.Time
	every time.Duration
	total func() int // the records to read in all; asked once, at the first report

	start, last time.Time
	done        int
	totalN      int // -1 until asked
}

// newProgress starts a progress log; now is the clock, a parameter so that a test can drive it.
func newProgress(log *slog.Logger, now func() time.Time, every time.Duration, total func() int) *progress {
	t := now()
	return &progress{log: log, now: now, every: every, total: total, start: t, last: t, totalN: -1}
}

// step counts one record read. It looks at the clock once every 1024 records, so that it costs
// nothing next to decoding the record.
func (p *progress) step() {
	p.done++
	if p.done%1024 != 0 {
		return
	}
	t := p.now()
	if t.Sub(p.last) < p.every {
		return
	}
	p.last = t
	if p.totalN < 0 {
		p.totalN = p.total()
	}
	elapsed := t.Sub(p.start)
	rate := float64(p.done) / elapsed.Seconds()
	attrs := []any{slog.Int("records", p.done), slog.Int("total", p.totalN),
		slog.Int("per_second", int(rate)), slog.Duration("elapsed", elapsed.Round(time.Second))}
	if left := p.totalN - p.done; left > 0 && rate > 0 {
		attrs = append(attrs, slog.Duration("remaining", time.Duration(float64(left)/rate*float64(time.Second)).Round(time.Second)))
	}
	p.log.Info("inflight: reading the data file", attrs...)
}

// countRecords counts the keys of every bucket recovery reads. It walks the pages without decoding
// a value: a fraction of the cost of the recovery it estimates.
func countRecords(tx *bolt.Tx) int {
	n := 0
	for _, name := range recoveryBuckets {
		if b := tx.Bucket(name); b != nil {
			n += b.Stats().KeyN
		}
	}
	return n
}
