package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncemq/oncemq/cmd/internal/childproc"
	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
)

// adminLine is serve's line once the admin listener is bound, before the store is recovered.
var adminLine = regexp.MustCompile(`msg="admin listener started" http_listen=(127\.0\.0\.1:[0-9]+)`)

// adminAddr is the admin listener's address from a broker's log.
func adminAddr(t *testing.T, b *oncemqtest.Broker) string {
	t.Helper()
	m := adminLine.FindStringSubmatch(b.Log())
	if m == nil {
		t.Fatalf("no admin listener in the broker's log:\n%s", b.Log())
	}
	return m[1]
}

// readyz GETs /readyz at addr and returns the status and the body.
func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawExpectTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// runHealth runs `oncemq health --http addr` and returns its exit code and output.
func runHealth(t *testing.T, bin, addr string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, "health", "--http", addr)
	cmd.Env = childproc.EnvironWithout("ONCEMQ_")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("run oncemq health: %v", err)
	}
	return 0, string(out)
}

// bigStore writes a state file holding one offline session with n queued messages, so that a
// broker takes a while to recover it. It is written with the journal itself, in large unsynced
// commits.
func bigStore(t *testing.T, dir string, n int) {
	t.Helper()
	j, _, err := inflight.Open(filepath.Join(dir, mqtt.DataFile), &inflight.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(strings.Repeat("p", 64))
	const perBatch = 20000
	for start := 0; start < n; start += perBatch {
		b := &inflight.Batch{}
		if start == 0 {
			b.PutSession(inflight.SessionRecord{ClientID: "big", ProtocolVersion: 5, ExpiryInterval: 0xFFFFFFFF, DisconnectedAt: time.Now().UnixNano()})
		}
		for i := start; i < min(start+perBatch, n); i++ {
			m := &inflight.Message{Seq: j.NextSeq(), Topic: "big/t", Payload: payload, QoS: 2, Created: time.Now().UnixNano()}
			m.Ref()
			b.PutMessage(m)
			b.PutQueued("big", inflight.QueuedRecord{Order: uint64(i + 1), QoS: 2, MsgSeq: m.Seq})
		}
		done := make(chan error, 1)
		j.Submit(b, func(err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// /readyz answers 503 "recovering" while a large store is read back (and /healthz 200), and 200
// once the broker serves; `oncemq health` exits 1 then 0, and 1 again once the broker is gone.
func TestReadyzDuringRecoveryAndHealthExitCodes(t *testing.T) {
	t.Parallel()
	bin := oncemqtest.Build(t)
	dir := t.TempDir()
	bigStore(t, dir, recoveryMessages)
	var out childproc.Buffer
	proc, err := childproc.Start(childproc.Spec{Path: bin, Output: &out, Env: childproc.EnvironWithout("ONCEMQ_"),
		Args: []string{"serve", "--listen", "127.0.0.1:0", "--data", dir, "--http-listen", "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := proc.Kill(oncemqtest.ExitTimeout); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("broker output:\n%s", out.String())
		}
	}()
	m, err := out.WaitMatch(adminLine, oncemqtest.StartTimeout, proc.Done())
	if err != nil {
		t.Fatalf("no admin listener: %v", err)
	}
	addr, began := m[1], time.Now()
	status, body := readyz(t, addr)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "recovering") {
		t.Fatalf("/readyz right after the admin listener started on a store of %d messages: %d %q, want 503 recovering",
			recoveryMessages, status, body)
	}
	if code, hout := runHealth(t, bin, addr); code != 1 || !strings.Contains(hout, "recovering") {
		t.Errorf("oncemq health during recovery: exit %d, %q; want 1 naming the recovery", code, hout)
	}
	if _, err := out.WaitMatch(regexp.MustCompile(`msg="oncemq started"`), time.Minute, proc.Done()); err != nil {
		t.Fatalf("the broker did not finish recovering: %v", err)
	}
	t.Logf("recovery of %d queued messages took about %v", recoveryMessages, time.Since(began))
	if status, body := readyz(t, addr); status != http.StatusOK || body != "ready" {
		t.Fatalf("/readyz after recovery: %d %q, want 200 ready", status, body)
	}
	if code, hout := runHealth(t, bin, addr); code != 0 {
		t.Errorf("oncemq health when ready: exit %d, %q; want 0", code, hout)
	}
	recovered := regexp.MustCompile(`msg="inflight: recovered" .*queued=(\d+)`).FindStringSubmatch(out.String())
	if recovered == nil || recovered[1] != fmt.Sprint(recoveryMessages) {
		t.Errorf("recovery log %q, want queued=%d", recovered, recoveryMessages)
	}
	if _, err := proc.Stop(oncemqtest.ExitTimeout); err != nil {
		t.Fatal(err)
	}
	if code, hout := runHealth(t, bin, addr); code != 1 {
		t.Errorf("oncemq health with no broker: exit %d, %q; want 1", code, hout)
	}
}

// recoveryMessages makes a store whose recovery takes long enough (about a second or more) for
// /readyz to be asked during it.
const recoveryMessages = 300000

// The admin listener needs a token for the profiler off loopback: without one serve refuses to
// start, and says why.
func TestPprofOffLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	bin := oncemqtest.Build(t)
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--http-listen", "0.0.0.0:0",
		"--pprof", "--log-format", "json")
	cmd.Env = childproc.EnvironWithout("ONCEMQ_")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), `"msg":"oncemq cannot start"`) ||
		!strings.Contains(string(out), "needs --admin-token") {
		t.Fatalf("serve --http-listen 0.0.0.0:0 --pprof without a token: %v, output %q; want exit 1 and a JSON line saying it needs --admin-token",
			err, out)
	}
}
