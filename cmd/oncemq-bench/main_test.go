package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCaptured runs the dispatcher in this process with stdout and stderr captured.
func runCaptured(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, console{out: &o, err: &e})
	return code, o.String(), e.String()
}

// runBinary runs the test binary as oncemq-bench (see TestMain), for the real exit status.
func runBinary(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "ONCEMQ_BENCH_AS_MAIN=1")
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("oncemq-bench %q: %v", args, err)
	}
	return code, o.String(), e.String()
}

// TestHelpListsCommands: --help, -h and help list every command with its one-line summary, and
// not the hidden mochi-peer.
func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"help", "help"}} {
		code, out, errOut := runCaptured(t, args...)
		if code != 0 || errOut != "" {
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", args, code, errOut)
		}
		for _, c := range commands() {
			line := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(c.name) + ` +(.*)$`).FindStringSubmatch(out)
			switch {
			case c.summary == "" && line != nil:
				t.Errorf("%q lists the hidden command %s", args, c.name)
			case c.summary != "" && (line == nil || line[1] != c.summary):
				t.Errorf("%q: no line %q with summary %q in:\n%s", args, c.name, c.summary, out)
			}
		}
		for _, want := range []string{"Usage: oncemq-bench [COMMAND] [flags]", "--out DIR", "temp folder"} {
			if !strings.Contains(out, want) {
				t.Errorf("%q lacks %q:\n%s", args, want, out)
			}
		}
	}
}

// TestCommandHelp: every command answers --help (and help COMMAND) with its usage on stdout.
func TestCommandHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--help"}, []string{"Usage: oncemq-bench [run] [flags]", "  --addr host:port", "  --out DIR"}},
		{[]string{"--addr", "x:1", "--help"}, []string{"Usage: oncemq-bench [run] [flags]"}},
		{[]string{"conns", "-h"}, []string{"Usage: oncemq-bench conns [flags]", "  --pid int", "  --out DIR"}},
		{[]string{"help", "compare"}, []string{"Usage: oncemq-bench compare [flags]", "about 17 minutes", "  --with-mochi\n",
			"  --out DIR", "system's temp folder", "(default oncemq-always,oncemq-none,mosquitto,mochi-bolt)"}},
	}
	for _, tt := range tests {
		code, out, errOut := runCaptured(t, tt.args...)
		if code != 0 || errOut != "" {
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", tt.args, code, errOut)
		}
		for _, want := range tt.want {
			if !strings.Contains(out, want) {
				t.Errorf("%q lacks %q:\n%s", tt.args, want, out)
			}
		}
		if strings.Contains(out, "\n  -") && !strings.Contains(out, "\n  --") {
			t.Errorf("%q spells flags with one dash:\n%s", tt.args, out)
		}
	}
}

// TestBadUsage: a bad flag, value or command is one error line and a hint on stderr, nothing on
// stdout, and exit status 2.
func TestBadUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--bogus"}, "oncemq-bench compare: unknown flag --bogus\nRun 'oncemq-bench compare --help' for usage.\n"},
		{[]string{"--bogus"}, "oncemq-bench run: unknown flag --bogus\nRun 'oncemq-bench run --help' for usage.\n"},
		{[]string{"run", "--count"}, "oncemq-bench run: flag --count needs a value\n"},
		{[]string{"conns", "--n", "0"}, "oncemq-bench conns: --n 0: must be between 1 and 50000\n"},
		{[]string{"compare", "--brokers", "mochi"}, "add --with-mochi"},
		{[]string{"bogus"}, "oncemq-bench: unknown command \"bogus\"\nRun 'oncemq-bench help' for usage.\n"},
		{[]string{"help", "bogus"}, "oncemq-bench help: unknown command \"bogus\"\n"},
	}
	for _, tt := range tests {
		code, out, errOut := runCaptured(t, tt.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, and %q", tt.args, code, out, errOut, tt.want)
		}
	}

	// The same through the binary, for the process's own exit status.
	code, out, errOut := runBinary(t, t.TempDir(), "compare", "--bogus")
	if want := "oncemq-bench compare: unknown flag --bogus\nRun 'oncemq-bench compare --help' for usage.\n"; code != 2 || out != "" || errOut != want {
		t.Errorf("oncemq-bench compare --bogus: exit %d, stdout %q, stderr %q; want 2, nothing, %q", code, out, errOut, want)
	}
}

// TestRunWritesIntoOut: run writes run.json into --out, or without it into a new folder under the
// temp folder (never the working directory), and says where.
func TestRunWritesIntoOut(t *testing.T) {
	addr := startOncemq(t, true)
	tmp, work := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	args := []string{"run", "--addr", addr, "--count", "100", "--quiet"}

	out := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := runBinary(t, work, append(args, "--out", out)...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	checkRunJSON(t, filepath.Join(out, "run.json"), stdout)

	code, stdout, stderr = runBinary(t, work, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	made, _ := filepath.Glob(filepath.Join(tmp, "oncemq-bench-run-*", "run.json"))
	if len(made) != 1 {
		t.Fatalf("without --out: %d run.json files under the temp folder, want 1; stdout:\n%s", len(made), stdout)
	}
	checkRunJSON(t, made[0], stdout)
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("run wrote into the working directory: %v", entries)
	}
}

func checkRunJSON(t *testing.T, path, stdout string) {
	t.Helper()
	if !strings.Contains(stdout, "result written to "+path+"\n") {
		t.Errorf("stdout does not name %s:\n%s", path, stdout)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Workload != "qos2-1to1" || res.Published != 100 || res.Lost != 0 || res.Duplicates != 0 {
		t.Errorf("%s: %+v", path, res)
	}
}

// TestCompareSmall runs a one-phase compare (mochi-bolt, which needs nothing installed, QoS 0,
// 200 messages): it prints a phase line as it goes, and writes its tables, JSON and plot into
// --out.
func TestCompareSmall(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := runBinary(t, t.TempDir(), "compare", "--brokers", "mochi-bolt", "--workloads", "qos0-fanin",
		"--sizes", "16", "--count", "200", "--drain", "10s", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^\[1/1 0m\d\ds\] qos0-fanin 16 B mochi-bolt: delivered \d+ msg/s, p99 `).MatchString(stderr) {
		t.Errorf("no phase line on stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, "results into "+out) || !strings.Contains(stdout, "results written to "+out) {
		t.Errorf("the results folder is not named:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "compare.md"))
	if err != nil || !strings.Contains(string(md), "| qos0-fanin | 16 B | mochi-bolt |") || !strings.Contains(stdout, string(md)) {
		t.Errorf("compare.md (%v):\n%s\nstdout:\n%s", err, md, stdout)
	}
	var rep compareReport
	if b, err := os.ReadFile(filepath.Join(out, "compare.json")); err != nil || json.Unmarshal(b, &rep) != nil ||
		len(rep.Runs) != 1 || rep.Runs[0].Broker != "mochi-bolt" || rep.Runs[0].Published != 200 {
		t.Errorf("compare.json (%v): %+v", err, rep)
	}
	if _, err := os.Stat(filepath.Join(out, "compare.png")); err != nil {
		t.Error(err)
	}
}

func TestOutputDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	a, err := outputDir("", "compare")
	if err != nil {
		t.Fatal(err)
	}
	b, err := outputDir("", "compare")
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Dir(a) != tmp || !strings.HasPrefix(filepath.Base(a), "oncemq-bench-compare-") {
		t.Errorf("default folders %s and %s: want two new ones under %s", a, b, tmp)
	}
	given := filepath.Join(tmp, "x", "y")
	if dir, err := outputDir(given, "run"); err != nil || dir != given {
		t.Errorf("outputDir(%s) = %s, %v", given, dir, err)
	}
	if st, err := os.Stat(given); err != nil || !st.IsDir() {
		t.Errorf("--out folder not made: %v", err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := outputDir(file, "run"); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("outputDir on a file: %v, want an error naming --out", err)
	}
}
