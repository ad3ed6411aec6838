//go:build linux

package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
)

// After the store fails (the file size limit of TestStoreFailureRefusesQoS12), /readyz answers 503
// naming the failure, the store-failed gauge is 1, and `oncemq health` exits 1, while /healthz
// still answers: the process serves, the broker cannot take QoS 1 and 2 work.
func TestReadyzAfterStoreFailure(t *testing.T) {
	t.Parallel()
	bin := oncemqtest.Build(t)
	b := oncemqtest.StartBroker(t, bin, t.TempDir(), nil, "--http-listen", "127.0.0.1:0")
	addr := adminAddr(t, b)
	if status, body := readyz(t, addr); status != http.StatusOK {
		t.Fatalf("/readyz of a healthy broker: %d %q", status, body)
	}
	watcher := dialRaw(t, b.Addr, "watcher")
	watcher.connect(failWatcherID, false)
	watcher.subscribe(1, crashTopic, 2)
	pub := dialRaw(t, b.Addr, "publisher")
	pub.connectClean("fail-publisher")
	f := &filler{c: pub, acked: map[string]bool{}}
	limitFileSize(t, b, filepath.Join(b.DataDir, "oncemq.db"))
	if !f.fill(failMaxFill) {
		t.Fatalf("the store did not fail within %d messages under the file size limit", failMaxFill)
	}
	status, body := readyz(t, addr)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "store failed") {
		t.Errorf("/readyz after the store failed: %d %q, want 503 naming the store", status, body)
	}
	if code, out := runHealth(t, bin, addr); code != 1 || !strings.Contains(out, "store failed") {
		t.Errorf("oncemq health after the store failed: exit %d, %q; want 1 naming the store", code, out)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(metrics), "\noncemq_store_failed 1\n") {
		t.Errorf("/metrics after the store failed lacks oncemq_store_failed 1")
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz after the store failed: %v %v, want 200", resp, err)
	} else {
		resp.Body.Close()
	}
}
