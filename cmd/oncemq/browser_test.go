package main

// A real browser over MQTT over WebSocket: headless Chromium loads a page that uses the mqtt npm
// package (testdata/browser) to subscribe and publish at QoS 2 over ws://, and posts back what it
// received. The test fails, never skips, when Chromium or the npm package is missing.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/internal/childproc"
	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// browserTimeout bounds the page's whole run, Chromium's start included.
const browserTimeout = 60 * time.Second

// requireBrowser returns the Chromium binary and the folder of the browser test, or fails t
// saying how to install what is missing.
func requireBrowser(t *testing.T) (chromium, dir string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (%v): the browser test needs it; install it with: apt-get install -y chromium", err)
	}
	dir, err = filepath.Abs(filepath.Join("..", "..", "testdata", "browser"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "mqtt", "dist", "mqtt.min.js")); err != nil {
		t.Fatalf("the mqtt npm package is not installed (%v); install it with: apt-get install -y nodejs npm && (cd testdata/browser && npm ci)", err)
	}
	return chromium, dir
}

// pageResult is what the page posts to /result.
type pageResult struct {
	Error    string `json:"error"`
	Received []struct {
		Topic   string `json:"topic"`
		Payload string `json:"payload"`
		QoS     int    `json:"qos"`
	} `json:"received"`
}

// The browser subscribes at QoS 2 over ws://, publishes three QoS 2 messages and receives them
// back at QoS 2; a subscriber on the TCP listener receives them too.
func TestBrowserOverWebSocket(t *testing.T) {
	chromium, dir := requireBrowser(t)
	b := startBroker(t, t.TempDir(), nil, "--ws-listen", "127.0.0.1:0")
	ws, _, _ := onlyURL(t, b, "ws")
	run := fmt.Sprint(time.Now().UnixNano())
	topic := "browser/" + run

	tcp := mqtttest.Dial(t, b.Addr, 5)
	tcp.Connect(t, "tcp-watcher", true, 0)
	tcp.SubscribeOK(t, 1, topic, 2)

	results := make(chan []byte, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, filepath.Join(dir, "index.html")) })
	mux.HandleFunc("/mqtt.min.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(dir, "node_modules", "mqtt", "dist", "mqtt.min.js"))
	})
	mux.HandleFunc("POST /result", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case results <- body:
		default:
		}
	})
	page := httptest.NewServer(mux)
	defer page.Close()

	browser, browserOut := startChromium(t, chromium, page.URL+"/?"+url.Values{"ws": {ws}, "run": {run}}.Encode())
	var body []byte
	select {
	case body = <-results:
	case <-browser.Done():
		t.Fatalf("chromium exited before the page reported: %v\n%s", browser.Exit(), browserOut.String())
	case <-time.After(browserTimeout):
		t.Fatalf("the page reported nothing within %v; chromium:\n%s", browserTimeout, browserOut.String())
	}
	var res pageResult
	if err := json.Unmarshal(body, &res); err != nil || res.Error != "" {
		t.Fatalf("page result %s (%v)", body, err)
	}
	var got []string
	for _, m := range res.Received {
		got = append(got, fmt.Sprintf("%s %s q%d", m.Topic, m.Payload, m.QoS))
	}
	if want := []string{topic + " one q2", topic + " two q2", topic + " three q2"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the browser received %q, want %q", got, want)
	}
	// The broker sends the three PUBLISHes without waiting for the first's PUBREC.
	var ids []uint16
	for _, p := range []string{"one", "two", "three"} {
		ids = append(ids, tcp.ExpectPublish(t, topic, 2, p).PacketID)
	}
	for _, id := range ids {
		tcp.Pubrec(id)
		tcp.ExpectID(t, packets.Pubrel, id)
		tcp.Pubcomp(id)
	}
}

// startChromium runs headless Chromium on pageURL in a process group of its own, killed whole in
// t's cleanup with the renderer and helper processes it started.
func startChromium(t *testing.T, chromium, pageURL string) (*childproc.Proc, *childproc.Buffer) {
	t.Helper()
	out := &childproc.Buffer{}
	p, err := childproc.Start(childproc.Spec{
		Path: chromium,
		Args: []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
			"--disable-extensions", "--user-data-dir=" + t.TempDir(), pageURL},
		Output: out,
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		// The group first, while its leader is alive and the group id surely Chromium's.
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		_, _ = p.Kill(oncemqtest.ExitTimeout)
	})
	return p, out
}
