//go:build failpoint

package failpoint

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		point   string
		n       uint64
		wantErr []string // the error must contain each
	}{
		{in: ""},
		{in: "  \n"},
		{in: "before-pubrec", point: BeforePubrec, n: 1},
		{in: " before-pubrel\n", point: BeforePubrel, n: 1},
		{in: "before-puback:1", point: BeforePuback, n: 1},
		{in: "before-publish:3", point: BeforePublish, n: 3},
		{in: "before-pubcomp:18446744073709551615", point: BeforePubcomp, n: 1<<64 - 1},

		{in: "before-connack", wantErr: append([]string{Env, `"before-connack"`}, Points...)},
		{in: "BEFORE-PUBREC", wantErr: []string{Env, "before-pubrec, before-puback"}},
		{in: ":2", wantErr: []string{Env, "unknown crash point"}},
		{in: "before-pubrec:", wantErr: []string{Env, "at least 1"}},
		{in: "before-pubrec:0", wantErr: []string{Env, `"0"`}},
		{in: "before-pubrec:-1", wantErr: []string{Env, `"-1"`}},
		{in: "before-pubrec:x", wantErr: []string{Env, `"x"`}},
		{in: "before-pubrec:1:2", wantErr: []string{Env, `"1:2"`}},
		{in: "before-pubrec:18446744073709551616", wantErr: []string{Env}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parse(tt.in)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("parse(%q) = %+v, want an error", tt.in, got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("parse(%q) error %q does not contain %q", tt.in, err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%q): %v", tt.in, err)
			}
			if tt.point == "" {
				if got != nil {
					t.Fatalf("parse(%q) = %+v, want nil", tt.in, got)
				}
				return
			}
			if got == nil || got.point != tt.point || got.n != tt.n {
				t.Fatalf("parse(%q) = %+v, want point %s hit %d", tt.in, got, tt.point, tt.n)
			}
		})
	}
}
