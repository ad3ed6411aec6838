package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
)

// runCaptured runs the dispatcher with stdout and stderr captured and the environment variables
// in env. None of these cases reaches the broker's start.
func runCaptured(t *testing.T, env map[string]string, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, cli.Env{Stdout: &o, Stderr: &e, Getenv: func(k string) string { return env[k] }, Version: "v9.9.9-test"})
	return code, o.String(), e.String()
}

func TestRun(t *testing.T) {
	tests := []struct {
		args    []string
		code    int
		out     string // stdout must contain it
		errOut  string // stderr must contain it
		errHint bool   // stderr must hold exactly an error line and a usage hint
	}{
		{args: []string{"version"}, out: "oncemq v9.9.9-test"},
		{args: []string{"--version"}, out: "oncemq v9.9.9-test"},
		{args: []string{"-version"}, out: "oncemq v9.9.9-test"},
		{args: []string{"version", "extra"}, code: 2, errOut: `"extra"`, errHint: true},
		{args: []string{"version", "--help"}, out: "Print the version"},
		{args: []string{"help"}, out: "serve"},
		{args: []string{"help"}, out: "torture"},
		{args: []string{"--help"}, out: "version"},
		{args: []string{"-h"}, out: "help"},
		{args: []string{"help", "serve"}, out: "--max-queued"},
		{args: []string{"help", "torture"}, out: "--takeover-every"},
		{args: []string{"help", "version"}, out: "Print the version"},
		{args: []string{"help", "help"}, out: "Commands:"},
		{args: []string{"help", "nope"}, code: 2, errOut: `"nope"`, errHint: true},
		{args: []string{"help", "serve", "x"}, code: 2, errOut: `"x"`, errHint: true},
		{args: []string{"serve", "--help"}, out: "ONCEMQ_LISTEN"},
		{args: []string{"serve", "-h"}, out: "--sync"},
		{args: []string{"torture", "--help"}, out: "-k, --kills"},
		{args: []string{"nope"}, code: 2, errOut: `unknown command "nope"`, errHint: true},
		{args: []string{"serve", "--sync", "fsync"}, code: 2, errOut: `"fsync"`, errHint: true},
		{args: []string{"--sync", "fsync"}, code: 2, errOut: `--sync`, errHint: true},
		{args: []string{"--max-queued", "x"}, code: 2, errOut: `--max-queued`, errHint: true},
		{args: []string{"--bogus"}, code: 2, errOut: `--bogus`, errHint: true},
		{args: []string{"serve", "stray"}, code: 2, errOut: `"stray"`, errHint: true},
		{args: []string{"torture", "-p", "0"}, code: 2, errOut: `--publishers`, errHint: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCaptured(t, nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if !strings.Contains(out, tt.out) {
				t.Errorf("stdout %q lacks %q", out, tt.out)
			}
			if !strings.Contains(errOut, tt.errOut) {
				t.Errorf("stderr %q lacks %q", errOut, tt.errOut)
			}
			if tt.errHint {
				lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
				if len(lines) != 2 || !strings.HasPrefix(lines[0], "oncemq") || !strings.Contains(lines[1], "for usage") {
					t.Errorf("stderr is not an error line plus a usage hint: %q", errOut)
				}
			}
			if tt.code == 0 && errOut != "" {
				t.Errorf("unexpected stderr %q", errOut)
			}
		})
	}
}

// The help lists every command of the table, and the built-in ones, once each in order.
func TestHelpListsEveryCommand(t *testing.T) {
	_, out, _ := runCaptured(t, nil, "help")
	names := []string{"help", "version"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	for _, name := range names {
		if n := strings.Count(out, "\n  "+name+" "); n != 1 {
			t.Errorf("help lists %q %d times:\n%s", name, n, out)
		}
	}
	if i, j := strings.Index(out, "\n  serve "), strings.Index(out, "\n  torture "); i < 0 || j < i {
		t.Errorf("commands not in name order:\n%s", out)
	}
}

func TestServeUsesEnvironment(t *testing.T) {
	code, _, errOut := runCaptured(t, map[string]string{"ONCEMQ_SYNC": "fsync"})
	if code != 2 || !strings.Contains(errOut, "ONCEMQ_SYNC") || !strings.Contains(errOut, `"fsync"`) {
		t.Errorf("oncemq with ONCEMQ_SYNC=fsync: code %d, stderr %q; want 2 naming the variable", code, errOut)
	}
}
