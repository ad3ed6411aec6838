package main

import (
	"strings"
	"testing"

	"github.com/oncemq/oncemq/session"
)

func TestParseCrashAt(t *testing.T) {
	tests := []struct {
		in      string
		want    *crashSpec
		wantErr []string // the error must contain each
	}{
		{in: "", want: nil},
		{in: "  \n", want: nil},
		{in: "before-pubrec", want: &crashSpec{point: session.CrashBeforePubrec, n: 1}},
		{in: " before-pubrel\n", want: &crashSpec{point: session.CrashBeforePubrel, n: 1}},
		{in: "before-puback:1", want: &crashSpec{point: session.CrashBeforePuback, n: 1}},
		{in: "before-publish:3", want: &crashSpec{point: session.CrashBeforePublish, n: 3}},
		{in: "before-pubcomp:18446744073709551615", want: &crashSpec{point: session.CrashBeforePubcomp, n: 1<<64 - 1}},

		{in: "before-connack", wantErr: append([]string{crashEnv, `"before-connack"`}, session.CrashPoints...)},
		{in: "BEFORE-PUBREC", wantErr: []string{crashEnv, "before-pubrec, before-puback"}},
		{in: ":2", wantErr: []string{crashEnv, "unknown crash point"}},
		{in: "before-pubrec:", wantErr: []string{crashEnv, "at least 1"}},
		{in: "before-pubrec:0", wantErr: []string{crashEnv, `"0"`}},
		{in: "before-pubrec:-1", wantErr: []string{crashEnv, `"-1"`}},
		{in: "before-pubrec:x", wantErr: []string{crashEnv, `"x"`}},
		{in: "before-pubrec:1:2", wantErr: []string{crashEnv, `"1:2"`}},
		{in: "before-pubrec:18446744073709551616", wantErr: []string{crashEnv}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseCrashAt(tt.in)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("parseCrashAt(%q) = %+v, want an error", tt.in, got)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("parseCrashAt(%q) error %q lacks %q", tt.in, err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("parseCrashAt(%q): %v", tt.in, err)
			}
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("parseCrashAt(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestCrashHookDiesAtNthHit(t *testing.T) {
	if (*crashSpec)(nil).hook(func() { t.Fatal("died") }) != nil {
		t.Fatal("a nil spec must give a nil hook, so that production runs have none")
	}
	deaths := 0
	hook := (&crashSpec{point: session.CrashBeforePublish, n: 3}).hook(func() { deaths++ })
	hits := []struct {
		point     string
		wantDeath int // deaths after this hit
	}{
		{session.CrashBeforePublish, 0},
		{session.CrashBeforePubrec, 0}, // other points do not count
		{session.CrashBeforePublish, 0},
		{session.CrashBeforePubrel, 0},
		{session.CrashBeforePublish, 1}, // the third hit
		{session.CrashBeforePublish, 1}, // only once (a real die never returns)
	}
	for i, h := range hits {
		hook(h.point)
		if deaths != h.wantDeath {
			t.Fatalf("after hit %d (%s): %d deaths, want %d", i+1, h.point, deaths, h.wantDeath)
		}
	}
}

// An unknown point stops start-up with bad usage, naming the variable and listing the valid points.
func TestServeRejectsUnknownCrashPoint(t *testing.T) {
	t.Setenv(crashEnv, "before-nothing")
	code, _, errOut := runCaptured(t, "serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0")
	if code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	for _, s := range append([]string{crashEnv, `"before-nothing"`}, session.CrashPoints...) {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr %q lacks %q", errOut, s)
		}
	}
}
