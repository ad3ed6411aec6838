package main

// Users and access end to end: the real binary with a password file written by the real
// mosquitto_passwd and an ACL file, driven by the real mosquitto_pub and mosquitto_sub at 3.1.1 and
// 5.0.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
)

const securityACL = `# anonymous clients (with --allow-anonymous): before any user line
topic read public/#

user alice
topic readwrite alice/#
topic read shared/#
topic deny shared/secret

user bob
topic write shared/#

pattern readwrite devices/%u/#
pattern write clients/%c/status
`

// securityFiles writes a password file with the real mosquitto_passwd (alice, bob) and the ACL.
func securityFiles(t *testing.T) (passwd, acl string) {
	t.Helper()
	if _, err := exec.LookPath("mosquitto_passwd"); err != nil {
		t.Fatal("mosquitto_passwd not found: install it with apt-get install -y mosquitto")
	}
	dir := t.TempDir()
	passwd, acl = filepath.Join(dir, "passwd"), filepath.Join(dir, "acl")
	for _, args := range [][]string{{"-c", "-b", passwd, "alice", "alice-pw"}, {"-b", passwd, "bob", "bob-pw"}} {
		if out, err := exec.Command("mosquitto_passwd", args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd %q: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(acl, []byte(securityACL), 0o600); err != nil {
		t.Fatal(err)
	}
	return passwd, acl
}

// mosquittoPubResult runs mosquitto_pub against b and returns its output and exit code.
func mosquittoPubResult(t *testing.T, b *oncemqtest.Broker, version string, args ...string) (string, int) {
	t.Helper()
	argv := append([]string{"-h", b.Host, "-p", b.Port, "-V", version, "-d"}, args...)
	cmd := exec.Command("mosquitto_pub", argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(mosquittoExitTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("mosquitto_pub %q did not finish\n%s", argv, out.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// connack is the CONNACK code mosquitto_pub -d printed, as "CONNACK (N)".
func expectConnack(t *testing.T, what, out, code string) {
	t.Helper()
	if !strings.Contains(out, "received CONNACK ("+code+")") {
		t.Errorf("%s: want CONNACK (%s), mosquitto_pub said:\n%s", what, code, out)
	}
}

// A password file written by mosquitto_passwd is accepted; a wrong password and an unknown user get
// the same code, 0x86 (3.1.1: 4); no credentials get 0x87 (3.1.1: 5); a Will the ACL does not let
// its client publish refuses the CONNECT with 0x87 (3.1.1: 5).
func TestSecurityConnectCodes(t *testing.T) {
	requireMosquitto(t)
	passwd, acl := securityFiles(t)
	b := startBroker(t, t.TempDir(), nil, "--password-file", passwd, "--acl-file", acl)
	for _, v := range []struct{ name, bad, refused string }{{"mqttv311", "4", "5"}, {"mqttv5", "134", "135"}} {
		out, code := mosquittoPubResult(t, b, v.name, "-u", "alice", "-P", "alice-pw", "-t", "alice/x", "-q", "1", "-m", "hi")
		if code != 0 {
			t.Errorf("%s alice: exit %d\n%s", v.name, code, out)
		}
		out, _ = mosquittoPubResult(t, b, v.name, "-u", "alice", "-P", "wrong", "-t", "alice/x", "-m", "hi")
		expectConnack(t, v.name+" wrong password", out, v.bad)
		out, _ = mosquittoPubResult(t, b, v.name, "-u", "mallory", "-P", "alice-pw", "-t", "alice/x", "-m", "hi")
		expectConnack(t, v.name+" unknown user", out, v.bad)
		out, _ = mosquittoPubResult(t, b, v.name, "-t", "alice/x", "-m", "hi")
		expectConnack(t, v.name+" anonymous", out, v.refused)
		out, _ = mosquittoPubResult(t, b, v.name, "-u", "alice", "-P", "alice-pw", "-t", "alice/x", "-m", "hi",
			"--will-topic", "shared/x", "--will-payload", "gone")
		expectConnack(t, v.name+" Will on a topic alice may not write", out, v.refused)
	}
	if !strings.Contains(b.Log(), `msg="login failed" remote=127.0.0.1:`) {
		t.Errorf("failed logins not logged with the remote address:\n%s", b.Log())
	}
}

// The ACL: publish and subscribe allowed and refused per rule, %u and %c patterns, and a retained
// message delivered only to who may read it, even to a subscription to #.
func TestSecurityACL(t *testing.T) {
	requireMosquitto(t)
	passwd, acl := securityFiles(t)
	b := startBroker(t, t.TempDir(), nil, "--password-file", passwd, "--acl-file", acl)
	bob := []string{"-u", "bob", "-P", "bob-pw"}
	alice := []string{"-u", "alice", "-P", "alice-pw"}
	mosquittoPub(t, b, "mqttv5", append(bob, "-t", "shared/open", "-r", "-q", "1", "-m", "open")...)
	mosquittoPub(t, b, "mqttv5", append(bob, "-t", "shared/secret", "-r", "-q", "1", "-m", "secret")...)
	for _, v := range []string{"mqttv311", "mqttv5"} {
		allowed := func(what string, args ...string) {
			t.Helper()
			if out, code := mosquittoPubResult(t, b, v, args...); code != 0 || strings.Contains(out, "failed") {
				t.Errorf("%s %s: exit %d, want it accepted:\n%s", v, what, code, out)
			}
		}
		refused := func(what string, args ...string) {
			t.Helper()
			out, _ := mosquittoPubResult(t, b, v, args...)
			if v == "mqttv5" && !strings.Contains(out, "Not authorized") {
				t.Errorf("%s %s: want PUBACK Not authorized:\n%s", v, what, out)
			}
		}
		// alice subscribes to everything; bob to his own tree (%u).
		all := startMosquittoSub(t, b, v, append(alice, "-t", "#", "-q", "1", "-C", "2", "-W", "10")...)
		own := startMosquittoSub(t, b, v, append(bob, "-t", "devices/bob/#", "-q", "1", "-C", "1", "-W", "10")...)
		allowed("bob writes shared/secret, which alice may not read", append(bob, "-t", "shared/secret", "-q", "1", "-m", "no")...)
		allowed("bob writes his own tree (%u)", append(bob, "-t", "devices/bob/t", "-q", "1", "-m", "own")...)
		refused("bob writes alice/x", append(bob, "-t", "alice/x", "-q", "1", "-m", "not bob's")...)
		refused("alice writes shared/, read only for her", append(alice, "-t", "shared/alice", "-q", "1", "-m", "ro")...)
		allowed("client lamp writes its status (%c)", append(alice, "-i", "lamp", "-t", "clients/lamp/status", "-q", "1", "-m", "on")...)
		refused("client other writes lamp's status", append(alice, "-i", "other", "-t", "clients/lamp/status", "-q", "1", "-m", "on")...)
		allowed("alice writes her tree", append(alice, "-t", "alice/x", "-q", "1", "-m", "mine")...)
		// Anything refused above would reach alice's # before "mine" and take its place.
		checkMessages(t, all.wait(t), mqttMessage{"1", "1", "shared/open", "open"}, mqttMessage{"1", "0", "alice/x", "mine"})
		checkMessages(t, own.wait(t), mqttMessage{"1", "0", "devices/bob/t", "own"})

		// A filter no read rule of the user can match is refused at SUBSCRIBE.
		out := mosquittoSubOnce(t, b, v, append(alice, "-t", "devices/bob/#")...)
		if !strings.Contains(out, "denied") {
			t.Errorf("%s alice subscribing to devices/bob/#: want the subscription denied:\n%s", v, out)
		}
	}
}

// mosquittoSubOnce runs mosquitto_sub -d for at most two seconds and returns what it printed.
func mosquittoSubOnce(t *testing.T, b *oncemqtest.Broker, version string, args ...string) string {
	t.Helper()
	argv := append([]string{"-h", b.Host, "-p", b.Port, "-V", version, "-d", "-W", "2", "-C", "1"}, args...)
	out, _ := exec.Command("mosquitto_sub", argv...).CombinedOutput()
	return string(out)
}

// A client id whose session belongs to alice is refused to bob and to an anonymous client, 0x87
// (3.1.1: 5), and alice's session stays hers: it still gets what was queued for it.
func TestSecuritySessionOwnership(t *testing.T) {
	requireMosquitto(t)
	passwd, acl := securityFiles(t)
	b := startBroker(t, t.TempDir(), nil, "--password-file", passwd, "--acl-file", acl, "--allow-anonymous")
	for _, v := range []struct{ name, refused string }{{"mqttv311", "5"}, {"mqttv5", "135"}} {
		id := "dev-" + v.name
		session := []string{"-i", id, "-c", "-q", "1", "-t", "alice/#"}
		if v.name == "mqttv5" {
			session = append(session, "-x", "600")
		}
		first := startMosquittoSub(t, b, v.name, append([]string{"-u", "alice", "-P", "alice-pw", "-C", "1", "-W", "10"}, session...)...)
		mosquittoPub(t, b, v.name, "-u", "alice", "-P", "alice-pw", "-t", "alice/a", "-q", "1", "-m", "1")
		first.wait(t)
		mosquittoPub(t, b, v.name, "-u", "alice", "-P", "alice-pw", "-t", "alice/a", "-q", "1", "-m", "queued")
		for _, who := range [][]string{{"-u", "bob", "-P", "bob-pw"}, nil} {
			out, _ := mosquittoPubResult(t, b, v.name, append(who, "-i", id, "-t", "public/x", "-m", "x")...)
			expectConnack(t, v.name+" another identity with alice's client id", out, v.refused)
		}
		// The resumed session gets what was queued, possibly before its new SUBACK.
		out := mosquittoSubOnce(t, b, v.name, append([]string{"-F", messageFormat, "-u", "alice", "-P", "alice-pw"}, session...)...)
		if !strings.Contains(out, "MSG|1|0|alice/a|queued") {
			t.Errorf("%s alice resuming her session: want the queued message:\n%s", v.name, out)
		}
	}
}

// Each start-up refusal exits 1 with a message that says what to fix: a listener off loopback
// without authentication (naming the listener and both ways out), a password hash of an unknown
// format and a bad ACL line (each with file and line).
func TestSecurityStartupRefusals(t *testing.T) {
	bin := oncemqtest.Build(t)
	dir := t.TempDir()
	badPasswd, badACL := filepath.Join(dir, "passwd"), filepath.Join(dir, "acl")
	os.WriteFile(badPasswd, []byte("# users\nalice:$1$abc$def\n"), 0o600)
	os.WriteFile(badACL, []byte("user alice\ntopic read a/#/b\n"), 0o600)
	_, goodACL := securityFiles(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"off loopback without authentication", []string{"--listen", "0.0.0.0:0"},
			[]string{"listener 0.0.0.0:0 is not on a loopback address", "--password-file", "--allow-anonymous"}},
		{"unknown hash", []string{"--password-file", badPasswd}, []string{badPasswd + ":2:", "unknown password hash format"}},
		{"bad ACL line", []string{"--acl-file", badACL}, []string{badACL + ":2:", "invalid topic filter"}},
		{"identity as username without client certificates", []string{"--acl-file", goodACL, "--tls-identity-as-username"},
			[]string{"--tls-identity-as-username needs client certificates"}},
	} {
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data")}, tc.args...)
		out, err := exec.Command(bin, args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%s: %v, want exit 1\n%s", tc.name, err, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: output does not say %q:\n%s", tc.name, w, out)
			}
		}
	}
}

// SIGHUP reloads the password file without dropping connections; a file that fails to parse keeps
// the previous one, and the log says why.
func TestSecuritySIGHUPReload(t *testing.T) {
	requireMosquitto(t)
	passwd, acl := securityFiles(t)
	b := startBroker(t, t.TempDir(), nil, "--password-file", passwd, "--acl-file", acl)
	live := startMosquittoSub(t, b, "mqttv5", "-u", "alice", "-P", "alice-pw", "-t", "alice/#", "-q", "1", "-C", "1", "-W", "20")
	carol := []string{"-u", "carol", "-P", "carol-pw", "-t", "devices/carol/x", "-q", "1", "-m", "x"}
	out, _ := mosquittoPubResult(t, b, "mqttv5", carol...)
	expectConnack(t, "carol before the reload", out, "134")

	if out, err := exec.Command("mosquitto_passwd", "-b", passwd, "carol", "carol-pw").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v\n%s", err, out)
	}
	hup := func(want string) {
		t.Helper()
		if err := b.Proc().Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(b.Log(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log after SIGHUP:\n%s", want, b.Log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	hup(`msg=reloaded what="password file ` + passwd + `"`)
	if out, code := mosquittoPubResult(t, b, "mqttv5", carol...); code != 0 || strings.Contains(out, "failed") {
		t.Errorf("carol after the reload: exit %d\n%s", code, out)
	}

	appendTo(t, passwd, "dave:$9$nonsense\n")
	hup("reload failed, keeping the previous version")
	if out, code := mosquittoPubResult(t, b, "mqttv5", carol...); code != 0 || strings.Contains(out, "failed") {
		t.Errorf("carol after a failed reload: exit %d, want the previous file still in force\n%s", code, out)
	}
	mosquittoPub(t, b, "mqttv5", "-u", "alice", "-P", "alice-pw", "-t", "alice/x", "-q", "1", "-m", "still here")
	checkMessages(t, live.wait(t), mqttMessage{"1", "0", "alice/x", "still here"}) // the connection stayed
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
