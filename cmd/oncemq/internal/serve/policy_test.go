package serve

import (
	"strings"
	"testing"
)

func TestDecideAccess(t *testing.T) {
	for _, tc := range []struct {
		name                              string
		listeners                         []string
		passwords, certs, allow, wantAnon bool
		wantErr                           string
	}{
		{"loopback, nothing configured: anonymous on", []string{"127.0.0.1:1883", "[::1]:1883", "localhost:1"}, false, false, false, true, ""},
		{"off loopback without auth: refused", []string{"127.0.0.1:1883", ":1883"}, false, false, false, false, "listener :1883 is not on a loopback"},
		{"off loopback, allow anonymous", []string{"0.0.0.0:1883"}, false, false, true, true, ""},
		{"password file: anonymous off", []string{"0.0.0.0:1883"}, true, false, false, false, ""},
		{"password file on loopback: anonymous off too", []string{"127.0.0.1:1883"}, true, false, false, false, ""},
		{"password file and allow anonymous", []string{":1883"}, true, false, true, true, ""},
		{"client certificates: anonymous off", []string{"10.0.0.1:8883"}, false, true, false, false, ""},
		{"a host name is not loopback", []string{"broker.example:1883"}, false, false, false, false, "broker.example:1883"},
	} {
		p, err := decideAccess(tc.listeners, tc.passwords, tc.certs, tc.allow)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		case tc.wantErr != "":
			for _, way := range []string{"--password-file", "--allow-anonymous"} {
				if !strings.Contains(err.Error(), way) {
					t.Errorf("%s: error %q does not name the way out %s", tc.name, err, way)
				}
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case p.anonymous != tc.wantAnon:
			t.Errorf("%s: anonymous %t, want %t", tc.name, p.anonymous, tc.wantAnon)
		}
	}
}
