package main

// Transport tests against the real binary: TLS and mutual TLS with the real mosquitto clients,
// MQTT over WebSocket beside TCP on one broker, certificates reloaded on SIGHUP, and the start-up
// refusals of bad transport settings. Certificates are made by each test (mqtttest.CA).

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
	"github.com/oncemq/oncemq/mqtt/websocket"
)

// tlsBroker starts a broker with a TLS and a wss listener beside its TCP one, its certificate
// issued by a new CA; with clientCA it requires client certificates signed by that CA.
func tlsBroker(t *testing.T, clientCA bool, args ...string) (*oncemqtest.Broker, *mqtttest.CA, mqtttest.TLSFiles) {
	t.Helper()
	ca := mqtttest.NewCA(t, "oncemq test CA")
	f := ca.WriteFiles(t, t.TempDir(), "server", "localhost")
	args = append([]string{"--tls-listen", "127.0.0.1:0", "--wss-listen", "127.0.0.1:0", "--tls-cert", f.Cert, "--tls-key", f.Key}, args...)
	if clientCA {
		args = append(args, "--tls-client-ca", f.CA)
	}
	return startBroker(t, t.TempDir(), nil, args...), ca, f
}

// onlyURL is the one listener of scheme, split into host and port.
func onlyURL(t *testing.T, b *oncemqtest.Broker, scheme string) (u, host, port string) {
	t.Helper()
	urls := b.URLs(scheme)
	if len(urls) != 1 {
		t.Fatalf("%s listeners %q, want one:\n%s", scheme, urls, b.Log())
	}
	p, err := url.Parse(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	return urls[0], p.Hostname(), p.Port()
}

// runMosquittoPub runs mosquitto_pub with argv and returns its output and error.
func runMosquittoPub(t *testing.T, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mosquittoExitTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "mosquitto_pub", argv...).CombinedOutput()
	return string(out), err
}

// mosquitto_sub and mosquitto_pub with --cafile reach each other through the TLS listener, QoS 2,
// in 3.1.1 and 5.0; without --cafile the certificate is not trusted.
func TestTLSWithMosquitto(t *testing.T) {
	requireMosquitto(t)
	b, _, f := tlsBroker(t, false)
	_, host, port := onlyURL(t, b, "mqtts")
	for _, v := range mosquittoVersions {
		t.Run(v, func(t *testing.T) {
			topic := "tls/" + v
			sub := startMosquittoSub(t, b, v, "-h", host, "-p", port, "--cafile", f.CA, "-q", "2", "-t", topic, "-C", "1", "-W", "10")
			mosquittoPub(t, b, v, "-h", host, "-p", port, "--cafile", f.CA, "-q", "2", "-t", topic, "-m", "over TLS")
			checkMessages(t, sub.wait(t), mqttMessage{QoS: "2", Retain: "0", Topic: topic, Payload: "over TLS"})
		})
	}
	// A CA the broker's certificate is not from: the handshake fails.
	other := mqtttest.NewCA(t, "other CA").WriteFiles(t, t.TempDir(), "other", "localhost")
	if out, err := runMosquittoPub(t, "-h", host, "-p", port, "--cafile", other.CA, "-t", "x", "-m", "y"); err == nil {
		t.Errorf("mosquitto_pub trusting another CA succeeded: %s", out)
	}
}

// Mutual TLS: mosquitto_pub with --cert/--key signed by the client CA is served; without a
// client certificate, or with one from another CA, the handshake is refused.
func TestMutualTLSWithMosquitto(t *testing.T) {
	requireMosquitto(t)
	b, ca, f := tlsBroker(t, true)
	_, host, port := onlyURL(t, b, "mqtts")
	dir := t.TempDir()
	dev := ca.WriteFiles(t, dir, "device", "device-1")
	for _, v := range mosquittoVersions {
		t.Run(v, func(t *testing.T) {
			topic := "mtls/" + v
			tlsArgs := []string{"-h", host, "-p", port, "--cafile", f.CA, "--cert", dev.Cert, "--key", dev.Key}
			sub := startMosquittoSub(t, b, v, append(tlsArgs, "-q", "2", "-t", topic, "-C", "1", "-W", "10")...)
			mosquittoPub(t, b, v, append(tlsArgs, "-q", "2", "-t", topic, "-m", "mutual")...)
			checkMessages(t, sub.wait(t), mqttMessage{QoS: "2", Retain: "0", Topic: topic, Payload: "mutual"})
		})
	}
	if out, err := runMosquittoPub(t, "-h", host, "-p", port, "--cafile", f.CA, "-t", "x", "-m", "no cert"); err == nil {
		t.Errorf("mosquitto_pub without a client certificate succeeded: %s", out)
	}
	stranger := mqtttest.NewCA(t, "stranger CA").WriteFiles(t, dir, "stranger", "stranger")
	if out, err := runMosquittoPub(t, "-h", host, "-p", port, "--cafile", f.CA, "--cert", stranger.Cert, "--key", stranger.Key,
		"-t", "x", "-m", "foreign cert"); err == nil {
		t.Errorf("mosquitto_pub with a certificate of another CA succeeded: %s", out)
	}
	// The same rule holds on wss://.
	wss, _, _ := onlyURL(t, b, "wss")
	ctx, cancel := context.WithTimeout(context.Background(), mqtttest.ExpectTimeout)
	defer cancel()
	if nc, err := websocket.Dial(ctx, wss, &tls.Config{RootCAs: ca.Pool()}); err == nil {
		nc.Close()
		t.Errorf("wss:// without a client certificate connected")
	}
}

// All listeners serve one broker: a paho.golang client publishing at QoS 2 over ws:// reaches a
// mosquitto_sub on TCP, and a session made over TCP resumes over wss:// with what was queued.
func TestWebSocketAndTCPShareTheBroker(t *testing.T) {
	requireMosquitto(t)
	b, ca, _ := tlsBroker(t, false, "--ws-listen", "127.0.0.1:0")
	ws, _, _ := onlyURL(t, b, "ws")
	wss, _, _ := onlyURL(t, b, "wss")

	sub := startMosquittoSub(t, b, "mqttv5", "-q", "2", "-t", "ws/#", "-C", "1", "-W", "10")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := paho.NewClient(paho.ClientConfig{ClientID: "ws-pub", Conn: nc})
	if _, err := pub.Connect(ctx, &paho.Connect{ClientID: "ws-pub", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatalf("paho connect over %s: %v", ws, err)
	}
	if r, err := pub.Publish(ctx, &paho.Publish{Topic: "ws/hall", QoS: 2, Payload: []byte("from the web")}); err != nil || r.ReasonCode != 0 {
		t.Fatalf("paho publish over ws://: %v %+v", err, r)
	}
	_ = pub.Disconnect(&paho.Disconnect{})
	checkMessages(t, sub.wait(t), mqttMessage{QoS: "2", Retain: "0", Topic: "ws/hall", Payload: "from the web"})

	// A persistent session over TCP, a message queued for it, then the session over wss://.
	tcp := mqtttest.Dial(t, b.Addr, 5)
	tcp.Connect(t, "roamer", true, 600)
	tcp.SubscribeOK(t, 1, "roam/#", 2)
	tcp.Disconnect(t)
	mosquittoPub(t, b, "mqttv311", "-q", "2", "-t", "roam/x", "-m", "queued")
	wnc, err := websocket.Dial(ctx, wss, &tls.Config{RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	c := mqtttest.NewClient(t, wnc, 5)
	if ack := c.Connect(t, "roamer", false, 600); !ack.SessionPresent {
		t.Fatal("CONNACK over wss://: session not present")
	}
	pk := c.ExpectPublish(t, "roam/x", 2, "queued")
	c.Pubrec(pk.PacketID)
	c.ExpectID(t, packets.Pubrel, pk.PacketID)
	c.Pubcomp(pk.PacketID)
}

// dialTLS connects to the TLS listener trusting ca and returns the raw client and the Common
// Name of the certificate the broker presented.
func dialTLS(t *testing.T, addr string, ca *mqtttest.CA) (*mqtttest.Client, string) {
	t.Helper()
	d := &tls.Dialer{Config: &tls.Config{RootCAs: ca.Pool()}}
	ctx, cancel := context.WithTimeout(context.Background(), mqtttest.ExpectTimeout)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	cn := nc.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName
	return mqtttest.NewClient(t, nc, 5), cn
}

// waitLog waits until the broker's log holds n times s.
func waitLog(t *testing.T, b *oncemqtest.Broker, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(oncemqtest.StartTimeout)
	for strings.Count(b.Log(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not log %q %d times:\n%s", s, n, b.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SIGHUP reloads the certificate: new connections get the new one while a connection made before
// goes on; a file that does not parse keeps the previous certificate and the log says why.
func TestCertificateReloadOnSIGHUP(t *testing.T) {
	b, ca, f := tlsBroker(t, false)
	_, host, port := onlyURL(t, b, "mqtts")
	addr := net.JoinHostPort(host, port)
	old, cn := dialTLS(t, addr, ca)
	if cn != "localhost" {
		t.Fatalf("certificate CN %q, want localhost", cn)
	}
	old.Connect(t, "before-reload", true, 0)

	renewed := ca.WriteFiles(t, t.TempDir(), "renewed", "renewed")
	for from, to := range map[string]string{renewed.Cert: f.Cert, renewed.Key: f.Key} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Proc().Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, b, "reloaded on SIGHUP", 1)
	if _, cn := dialTLS(t, addr, ca); cn != "renewed" {
		t.Errorf("after SIGHUP the certificate's CN is %q, want renewed", cn)
	}
	old.Ping(t)

	if err := os.WriteFile(f.Cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Proc().Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, b, "reloaded on SIGHUP", 2)
	if !strings.Contains(b.Log(), "the previous ones stay in use") || !strings.Contains(b.Log(), f.Cert) {
		t.Errorf("a bad certificate file is not reported with its name:\n%s", b.Log())
	}
	if _, cn := dialTLS(t, addr, ca); cn != "renewed" {
		t.Errorf("after a failed reload the certificate's CN is %q, want renewed (kept)", cn)
	}
	old.Ping(t)
}

// Bad transport settings stop start-up with exit status 2 and say what and where; the broker never
// starts half-configured.
func TestStartupRefusesBadTransportSettings(t *testing.T) {
	bin := oncemqtest.Build(t)
	configs, err := filepath.Abs(filepath.Join("..", "..", "testdata", "config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		mentions []string
	}{
		{"unknown config key", []string{"--config", filepath.Join(configs, "unknown-key.yaml")},
			[]string{"unknown-key.yaml:3:", `unknown key "tls-certs"`}},
		{"bad config value", []string{"--config", filepath.Join(configs, "bad-value.yaml")},
			[]string{"bad-value.yaml:4:", `"sometimes"`}},
		{"missing cert file in the config", []string{"--config", filepath.Join(configs, "missing-cert.yaml")},
			[]string{"missing-cert.yaml:2:", "no-such-dir/server.pem", "no such file"}},
		{"missing cert file", []string{"--tls-listen", "127.0.0.1:0", "--tls-cert", "nope.pem", "--tls-key", "nope-key.pem"},
			[]string{"--tls-cert", "nope.pem", "no such file"}},
		{"tls-listen without tls-cert", []string{"--tls-listen", "127.0.0.1:0"}, []string{"--tls-listen needs tls-cert and tls-key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"serve", "--data", t.TempDir()}, tc.args...)...)
			cmd.Dir = t.TempDir()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("oncemq serve %q: %v, want exit status 2\n%s", tc.args, err, out.String())
			}
			for _, m := range tc.mentions {
				if !strings.Contains(out.String(), m) {
					t.Errorf("output does not mention %q:\n%s", m, out.String())
				}
			}
			if strings.Contains(out.String(), "oncemq started") {
				t.Errorf("the broker started:\n%s", out.String())
			}
		})
	}
}

// With --tls-identity-as-username, the verified client certificate's Common Name is the username,
// with no password: the ACL's pattern devices/%u/# lets the device with certificate CN device-7
// write and read under devices/device-7/ and nowhere else, and the broker logs it by that name.
func TestTLSIdentityAsUsernameWithMosquitto(t *testing.T) {
	requireMosquitto(t)
	acl := filepath.Join(t.TempDir(), "acl")
	if err := os.WriteFile(acl, []byte("pattern readwrite devices/%u/#\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, ca, f := tlsBroker(t, true, "--tls-identity-as-username", "--acl-file", acl)
	_, host, port := onlyURL(t, b, "mqtts")
	dev := ca.WriteFiles(t, t.TempDir(), "device", "device-7")
	tlsArgs := []string{"-h", host, "-p", port, "--cafile", f.CA, "--cert", dev.Cert, "--key", dev.Key}
	for _, v := range mosquittoVersions {
		t.Run(v, func(t *testing.T) {
			// A filter wider than the rules is granted and filtered per message.
			sub := startMosquittoSub(t, b, v, append(tlsArgs, "-i", "sub-"+v, "-q", "1", "-t", "devices/#", "-C", "1", "-W", "10")...)
			if out, err := runMosquittoPub(t, append(tlsArgs, "-V", v, "-i", "pub-"+v, "-q", "1", "-t", "devices/device-8/x", "-m", "not mine")...); err != nil {
				t.Logf("publish to another device's topic: %v\n%s", err, out) // refused: 5.0 0x87, 3.1.1 acknowledged and dropped
			}
			mosquittoPub(t, b, v, append(tlsArgs, "-i", "pub-"+v, "-q", "1", "-t", "devices/device-7/x", "-m", "mine")...)
			checkMessages(t, sub.wait(t), mqttMessage{QoS: "1", Retain: "0", Topic: "devices/device-7/x", Payload: "mine"})
		})
	}
	if log := b.Log(); !strings.Contains(log, "username=device-7") {
		t.Errorf("the broker does not log the certificate's Common Name as the username:\n%s", log)
	}
}
