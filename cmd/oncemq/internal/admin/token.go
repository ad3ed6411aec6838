package admin

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// ReadToken reads the admin token from file: its content less surrounding white space, which must
// not be empty.
func ReadToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read admin token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("read admin token: %s is empty", file)
	}
	return tok, nil
}

// CheckExposure refuses an admin listener that is reachable from other machines and serves the
// profiler without a token: sessions, backups and profiles are not for anyone on the network
// (without a token the sessions API and the backup are not served at all).
func CheckExposure(addr string, token bool, pprof bool) error {
	if token || !pprof || isLoopback(addr) {
		return nil
	}
	return errors.New("--pprof on " + addr + ", which is not a loopback address, needs --admin-token")
}

// isLoopback reports whether addr (host:port) listens on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guard serves h only to a request with the header "Authorization: Bearer <token>" when there is
// a token; 401 otherwise.
func (a *Admin) guard(h http.HandlerFunc) http.Handler {
	if a.cfg.Token == "" {
		return h
	}
	want := []byte("Bearer " + a.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="oncemq"`)
			http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		h(w, r)
	})
}
