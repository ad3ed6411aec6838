package main

// The real oncemq binary as a child process (cmd/internal/oncemqtest): built once per test run,
// started on a free loopback port, killed with SIGKILL and restarted on the same data directory.
// Crash, interop, store-failure and start-up tests use it.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
)

// TestMain removes the binaries built by oncemqtest.Build. It is the package's only TestMain.
func TestMain(m *testing.M) {
	code := m.Run()
	oncemqtest.RemoveBuilds()
	os.Exit(code)
}

// startBroker runs the release build of oncemq (no crash points) on a free loopback port with its
// state in dataDir; see oncemqtest.StartBroker for env and args.
func startBroker(t testing.TB, dataDir string, env []string, args ...string) *oncemqtest.Broker {
	t.Helper()
	return oncemqtest.StartBroker(t, oncemqtest.Build(t), dataDir, env, args...)
}

// startCrashableBroker is startBroker with the build that has crash points (-tags failpoint):
// env may arm one with ONCEMQ_CRASH_AT.
func startCrashableBroker(t testing.TB, dataDir string, env []string, args ...string) *oncemqtest.Broker {
	t.Helper()
	return oncemqtest.StartBroker(t, oncemqtest.Build(t, "failpoint"), dataDir, env, args...)
}

// A data file that another oncemq holds, that is not a bbolt file at all, or that is empty, stops start-up with
// exit status 1 and a message naming the file, never an empty broker (DESIGN §5).
func TestStartupRefusesLockedOrCorruptData(t *testing.T) {
	bin := oncemqtest.Build(t)
	run := func(dir string) (string, error) {
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data", dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	held := t.TempDir()
	p := startBroker(t, held, nil)
	defer p.Kill()
	out, err := run(held)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "in use") || !strings.Contains(out, filepath.Join(held, "oncemq.db")) {
		t.Errorf("second broker on a held data file: %v, output %q; want exit 1 naming the file as in use", err, out)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "oncemq.db"), bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run(bad)
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, filepath.Join(bad, "oncemq.db")) {
		t.Errorf("corrupt data file: %v, output %q; want exit 1 naming the file", err, out)
	}

	// An empty oncemq.db is not a new store: a lost file system leaves one, and starting empty
	// on it would drop every session.
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "oncemq.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run(empty)
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, filepath.Join(empty, "oncemq.db")) ||
		!strings.Contains(out, "the file is empty (0 bytes)") {
		t.Errorf("empty data file: %v, output %q; want exit 1 naming the file as empty", err, out)
	}
}
