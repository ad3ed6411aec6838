package torture

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
)

// Run is usable without the CLI: a Config in, a Report out, progress lines to Config.Progress.
func TestRunAsALibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker")
	}
	cfg := DefaultConfig()
	cfg.Binary = oncemqtest.Build(t)
	cfg.Publishers, cfg.Subscribers, cfg.Messages, cfg.Kills, cfg.Seed = 1, 1, 100, 1, 3
	var progress bytes.Buffer
	cfg.Progress = &progress
	rep := Run(context.Background(), cfg)
	if !rep.Pass || rep.Kills != 1 || rep.Restarts != 2 || rep.Totals.Distinct != 100 || rep.TempDir != "" {
		t.Fatalf("report %+v; want a pass with 1 kill, 2 restarts, 100 messages, the temporary directory removed", rep)
	}
	for _, want := range []string{"seed 3 (replay with --seed 3)", "kill 1/1 at", "final kill at"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
}

// An invalid Config is a failed report naming why, not a panic or a run.
func TestRunRefusesAnInvalidConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Binary = "/nonexistent/oncemq"
	cfg.Window = 0
	rep := Run(context.Background(), cfg)
	if rep.Pass || len(rep.Failures) == 0 || !strings.Contains(rep.Failures[0], "--window") {
		t.Errorf("report %+v; want a failure naming --window", rep)
	}
	cfg = DefaultConfig()
	rep = Run(context.Background(), cfg)
	if rep.Pass || len(rep.Failures) == 0 || !strings.Contains(rep.Failures[0], "binary") {
		t.Errorf("report %+v; want a failure naming the missing binary", rep)
	}
}

// A binary that cannot run fails the run at start, with the reason.
func TestRunFailsWhenTheBrokerCannotStart(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Binary = "/nonexistent/oncemq"
	cfg.Seed = 1
	rep := Run(context.Background(), cfg)
	if rep.Pass || len(rep.Failures) == 0 || !strings.Contains(rep.Failures[0], "start the broker") {
		t.Errorf("report %+v; want a failure to start the broker", rep)
	}
	if rep.TempDir == "" {
		t.Error("a failed run should keep its temporary directory")
	} else {
		t.Cleanup(func() { os.RemoveAll(rep.TempDir) })
	}
}
