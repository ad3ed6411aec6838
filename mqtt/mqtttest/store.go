package mqtttest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
)

// CheckStore reopens the data file in dir of a stopped broker and fails t with every broken invariant, as
// bbolt's own test helper checks its file after each test: every integration test is also a test
// that the broker left a consistent store behind, not only that its clients saw the right packets.
//
// The file is opened as the next start would open it. Open fails on damage (records that fail
// their checksum, entries whose message is missing), and removes what it can (entries without a
// session, messages nobody refers to) with a warning or a count in its log instead of failing, so
// the warnings and those counts are violations too.
func CheckStore(t testing.TB, dir string) {
	t.Helper()
	path := filepath.Join(dir, mqtt.DataFile)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("mqtttest: store check after the test: %v", err)
		return
	}
	found := &recoveryFindings{}
	j, rec, err := inflight.Open(path, &inflight.Options{NoSync: true, Logger: slog.New(found)})
	if err != nil {
		t.Errorf("mqtttest: store check after the test: %v", err)
		return
	}
	problems := found.list()
	if err := rec.Check(); err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	if err := j.Close(); err != nil {
		problems = append(problems, fmt.Sprintf("close: %v", err))
	}
	if len(problems) > 0 {
		t.Errorf("mqtttest: the store the broker left in %s breaks its invariants:\n\t%s", path, strings.Join(problems, "\n\t"))
	}
}

// recoveryFindings is a slog.Handler that keeps what inflight.Open reports as wrong with a file:
// every warning and error, and a non-zero repair count.
type recoveryFindings struct {
	mu       sync.Mutex
	problems []string
}

func (h *recoveryFindings) Enabled(context.Context, slog.Level) bool { return true }

func (h *recoveryFindings) Handle(_ context.Context, r slog.Record) error {
	var attrs []string
	var repaired []string
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a.String())
		// The counts of inflight's recovery line of what Open removed as inconsistent.
		isRepair := a.Key == "orphans_removed" || a.Key == "broken_removed"
		if isRepair && a.Value.Kind() == slog.KindInt64 && a.Value.Int64() != 0 {
			repaired = append(repaired, a.String())
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Level >= slog.LevelWarn {
		h.problems = append(h.problems, fmt.Sprintf("%s %s %s", r.Level, r.Message, strings.Join(attrs, " ")))
	}
	if len(repaired) > 0 {
		h.problems = append(h.problems, fmt.Sprintf("%s: %s", r.Message, strings.Join(repaired, " ")))
	}
	return nil
}

func (h *recoveryFindings) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recoveryFindings) WithGroup(string) slog.Handler      { return h }

func (h *recoveryFindings) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.problems...)
}
