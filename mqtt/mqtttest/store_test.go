package mqtttest

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
)

// recordingTB keeps what CheckStore reports instead of failing the test.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// writeStore commits one batch built by fill to a new store in dir.
func writeStore(t *testing.T, dir string, fill func(j *inflight.Journal, b *inflight.Batch)) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	j, _, err := inflight.Open(filepath.Join(dir, mqtt.DataFile), &inflight.Options{NoSync: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var b inflight.Batch
	fill(j, &b)
	done := make(chan error, 1)
	j.Submit(&b, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

const client = "c"

func session(b *inflight.Batch) {
	b.PutSession(inflight.SessionRecord{ClientID: client, ProtocolVersion: 5, ExpiryInterval: 300})
}

// CheckStore passes a consistent store and reports each kind of damage: what inflight.Open repairs
// quietly, what it refuses (an entry whose message is missing), and a missing file.
func TestCheckStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		fill func(j *inflight.Journal, b *inflight.Batch)
		want string // in the report; "" for none
	}{
		{"consistent", func(j *inflight.Journal, b *inflight.Batch) {
			session(b)
			m := &inflight.Message{Seq: j.NextSeq(), Topic: "t", QoS: 2}
			m.Ref()
			b.PutMessage(m)
			b.PutOutbound(client, inflight.OutboundRecord{PacketID: 1, State: inflight.PublishSent, QoS: 2, Order: 1, MsgSeq: m.Seq})
		}, ""},
		{"message nobody refers to", func(j *inflight.Journal, b *inflight.Batch) {
			session(b)
			b.PutMessage(&inflight.Message{Seq: j.NextSeq(), Topic: "t", QoS: 1})
		}, "orphans_removed=1"},
		{"entry whose message is missing", func(j *inflight.Journal, b *inflight.Batch) {
			session(b)
			b.PutQueued(client, inflight.QueuedRecord{Order: 1, QoS: 1, MsgSeq: 42})
		}, "refers to message 42, which is missing"},
		{"entry without a session", func(j *inflight.Journal, b *inflight.Batch) {
			b.PutInbound("nobody", 7, 0)
		}, "without a session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeStore(t, dir, tc.fill)
			rec := &recordingTB{TB: t}
			CheckStore(rec, dir)
			report := strings.Join(rec.errors, "\n")
			t.Logf("report: %s", report)
			switch {
			case tc.want == "" && report != "":
				t.Fatalf("a consistent store reported:\n%s", report)
			case tc.want != "" && !strings.Contains(report, tc.want):
				t.Fatalf("report %q, want it to mention %q", report, tc.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		rec := &recordingTB{TB: t}
		CheckStore(rec, t.TempDir())
		if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], mqtt.DataFile) {
			t.Fatalf("got %q, want one error naming %s", rec.errors, mqtt.DataFile)
		}
	})
}
