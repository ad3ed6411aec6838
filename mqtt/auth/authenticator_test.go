package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/oncemq/oncemq/mqtt"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testPasswords(t *testing.T) *Passwords {
	t.Helper()
	h, err := HashPassword([]byte("secret"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePasswords(strings.NewReader("alice:"+h+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func request(user, password string, port int) *mqtt.ConnectRequest {
	req := &mqtt.ConnectRequest{Client: mqtt.Client{ID: "c", Username: user,
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}}
	if password != "" {
		req.Password = []byte(password)
	}
	return req
}

// Unknown user and wrong password get the same refusal; no credentials get Not authorized unless
// anonymous access is on.
func TestAuthenticatorAnswers(t *testing.T) {
	for _, anon := range []bool{false, true} {
		a := NewAuthenticator(AuthenticatorOptions{Passwords: testPasswords(t), AllowAnonymous: anon,
			Logger: quietLogger(), FailureDelay: time.Millisecond, MaxFailureDelay: time.Millisecond})
		ctx := context.Background()
		if u, err := a.Authenticate(ctx, request("alice", "secret", 1)); err != nil || u != "alice" {
			t.Errorf("alice: %q, %v", u, err)
		}
		for _, req := range []*mqtt.ConnectRequest{request("alice", "wrong", 1), request("mallory", "secret", 1), request("alice", "", 1)} {
			if _, err := a.Authenticate(ctx, req); !errors.Is(err, mqtt.ErrBadUsernameOrPassword) {
				t.Errorf("%q/%q: %v, want ErrBadUsernameOrPassword", req.Username, req.Password, err)
			}
		}
		u, err := a.Authenticate(ctx, request("", "", 1))
		switch {
		case anon && (err != nil || u != ""):
			t.Errorf("anonymous allowed: %q, %v", u, err)
		case !anon && !errors.Is(err, mqtt.ErrNotAuthorized):
			t.Errorf("anonymous refused: %v, want ErrNotAuthorized", err)
		}
	}
}

// Failed logins from one address wait longer and longer (bounded), other ports of the address
// included; a success starts over; the table of addresses is capped.
func TestThrottleGrowsResetsAndIsBounded(t *testing.T) {
	th := newThrottle(10*time.Millisecond, 80*time.Millisecond, time.Minute, 3)
	var got []time.Duration
	for range 6 {
		got = append(got, th.record("10.0.0.1"))
	}
	want := []time.Duration{10, 20, 40, 80, 80, 80}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	th.succeed(&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 999})
	if d := th.record("10.0.0.1"); d != 10*time.Millisecond {
		t.Errorf("after a success: %v, want the first delay again", d)
	}
	now := time.Now()
	th.now = func() time.Time { return now.Add(2 * time.Minute) }
	if d := th.record("10.0.0.1"); d != 10*time.Millisecond {
		t.Errorf("after a quiet period: %v, want the first delay again", d)
	}
	for i := range 10 {
		th.record(net.IPv4(10, 1, 0, byte(i)).String())
	}
	if n := th.tracked(); n > 3 {
		t.Errorf("%d addresses tracked, want at most 3", n)
	}
}

// The delay is waited before the refusal, and ends with the context.
func TestAuthenticatorWaitsBeforeRefusing(t *testing.T) {
	a := NewAuthenticator(AuthenticatorOptions{Passwords: testPasswords(t), Logger: quietLogger(),
		FailureDelay: 200 * time.Millisecond, MaxFailureDelay: time.Hour})
	start := time.Now()
	if _, err := a.Authenticate(context.Background(), request("alice", "wrong", 1)); err == nil {
		t.Fatal("wrong password accepted")
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("refused after %v, want at least the 200ms delay", d)
	}
	for range 5 {
		a.throttle.record("127.0.0.1") // the next delay would be an hour
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	a.Authenticate(ctx, request("alice", "wrong", 2))
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("waited %v, want the wait cut at the context's end", d)
	}
}

// With TLSIdentityAsUsername, the verified client certificate's Common Name is the username, with
// no password; without a verified certificate the client is refused.
func TestTLSIdentityAsUsername(t *testing.T) {
	cert := selfSigned(t, "sensor-17")
	a := NewAuthenticator(AuthenticatorOptions{TLSIdentityAsUsername: true, Logger: quietLogger(),
		FailureDelay: time.Millisecond})
	req := request("ignored", "", 1)
	req.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}
	if u, err := a.Authenticate(context.Background(), req); err != nil || u != "sensor-17" {
		t.Errorf("verified certificate: %q, %v; want sensor-17", u, err)
	}
	unverified := request("sensor-17", "", 1)
	unverified.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	for _, r := range []*mqtt.ConnectRequest{unverified, request("sensor-17", "", 1)} {
		if _, err := a.Authenticate(context.Background(), r); !errors.Is(err, mqtt.ErrNotAuthorized) {
			t.Errorf("no verified certificate: %v, want ErrNotAuthorized", err)
		}
	}
}

func selfSigned(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
