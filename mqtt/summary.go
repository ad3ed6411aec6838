package mqtt

import (
	"log/slog"
	"slices"
	"time"
)

// A summaryLog writes repeating events (drops, refusals) as one line of running totals at most
// once per interval, instead of one line per event: a flood of drops costs the log one line a
// minute, and no event is silent. The events themselves are counted where they happen, in atomics
// that a counter's read function loads; the summary only reads them.
type summaryLog struct {
	log      *slog.Logger
	msg      string
	interval time.Duration
	counters []summaryCounter
}

// summaryCounter is one total in a summary line: its key and how to read it.
type summaryCounter struct {
	key  string
	read func() uint64
}

// run logs the totals every interval in which any changed, and once more when done is closed if
// any is not zero, until done is closed.
func (s *summaryLog) run(done <-chan struct{}) {
	last := s.totals()
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			if now := s.totals(); slices.ContainsFunc(now, func(v uint64) bool { return v != 0 }) {
				s.write(now)
			}
			return
		case <-ticker.C:
			if now := s.totals(); !slices.Equal(now, last) {
				s.write(now)
				last = now
			}
		}
	}
}

func (s *summaryLog) totals() []uint64 {
	t := make([]uint64, len(s.counters))
	for i, c := range s.counters {
		t[i] = c.read()
	}
	return t
}

func (s *summaryLog) write(totals []uint64) {
	attrs := make([]any, len(totals))
	for i, v := range totals {
		attrs[i] = slog.Uint64(s.counters[i].key, v)
	}
	s.log.Info(s.msg, attrs...)
}
