package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCaptured runs the dispatcher with stdout and stderr captured. None of these cases reaches
// mqtt.New.
func runCaptured(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	oldOut, oldErr := stdout, stderr
	stdout, stderr = &o, &e
	defer func() { stdout, stderr = oldOut, oldErr }()
	code = run(args)
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
		{args: []string{"version"}, out: "oncemq " + version},
		{args: []string{"--version"}, out: "oncemq " + version},
		{args: []string{"-version"}, out: "oncemq " + version},
		{args: []string{"version", "extra"}, code: 2, errOut: `"extra"`, errHint: true},
		{args: []string{"help"}, out: "serve"},
		{args: []string{"--help"}, out: "version"},
		{args: []string{"-h"}, out: "help"},
		{args: []string{"help", "serve"}, out: "--max-queued"},
		{args: []string{"help", "help"}, out: "Commands:"},
		{args: []string{"help", "nope"}, code: 2, errOut: `"nope"`, errHint: true},
		{args: []string{"serve", "--help"}, out: "ONCEMQ_LISTEN"},
		{args: []string{"serve", "-h"}, out: "--sync"},
		{args: []string{"nope"}, code: 2, errOut: `unknown command "nope"`, errHint: true},
		{args: []string{"serve", "--sync", "fsync"}, code: 2, errOut: `"fsync"`, errHint: true},
		{args: []string{"--sync", "fsync"}, code: 2, errOut: `--sync`, errHint: true},
		{args: []string{"--max-queued", "x"}, code: 2, errOut: `--max-queued`, errHint: true},
		{args: []string{"--bogus"}, code: 2, errOut: `--bogus`, errHint: true},
		{args: []string{"serve", "stray"}, code: 2, errOut: `"stray"`, errHint: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCaptured(t, tt.args...)
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

func TestServeUsesEnvironment(t *testing.T) {
	t.Setenv("ONCEMQ_SYNC", "fsync")
	code, _, errOut := runCaptured(t)
	if code != 2 || !strings.Contains(errOut, "ONCEMQ_SYNC") || !strings.Contains(errOut, `"fsync"`) {
		t.Errorf("oncemq with ONCEMQ_SYNC=fsync: code %d, stderr %q; want 2 naming the variable", code, errOut)
	}
}
