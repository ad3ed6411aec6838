package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

const testToken = "s3cret-token"

// fixture is a broker with its admin endpoints on a real HTTP listener on 127.0.0.1.
type fixture struct {
	broker *mqtttest.Broker
	admin  *Admin
	http   *httptest.Server
}

func start(t *testing.T, cfg Config) *fixture {
	t.Helper()
	adm := New(cfg)
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.OnCommit = adm.OnCommit }))
	adm.SetServer(b.Server())
	adm.SetListening(true)
	hs := httptest.NewServer(adm.Handler())
	t.Cleanup(hs.Close)
	return &fixture{broker: b, admin: adm, http: hs}
}

// request does method on path with the token (none if ""), and returns the status and body.
func (f *fixture) request(t *testing.T, method, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, f.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// scrape reads /metrics into a map from "name{labels}" to value.
func (f *fixture) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	status, body := f.request(t, "GET", "/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// The counters of /metrics move by exactly the traffic sent: 3 QoS 0, 2 QoS 1 and 4 QoS 2
// PUBLISHes of known sizes from a publisher to one subscriber at QoS 2 (each delivered at the QoS
// it was published at), one refused CONNECT, and the commits they made.
func TestMetricsMoveByTheTrafficSent(t *testing.T) {
	t.Parallel()
	f := start(t, Config{})
	sub := f.broker.Dial(t, 5)
	sub.Connect(t, "sub", false, 300) // durable: its deliveries are committed
	sub.SubscribeOK(t, 1, "m/#", 2)
	pub := f.broker.Dial(t, 5)
	pub.Connect(t, "pub", true, 0)
	before := f.scrape(t)

	sizes := map[byte][]int{0: {10, 20, 30}, 1: {100, 200}, 2: {1, 2, 3, 4}}
	id := uint16(0)
	for qos := byte(0); qos <= 2; qos++ {
		for _, n := range sizes[qos] {
			id++
			pub.Publish("m/x", qos, id*uint16(min(qos, 1)), []byte(strings.Repeat("p", n)), false)
			switch qos {
			case 1:
				pub.ExpectID(t, packets.Puback, id)
			case 2:
				pub.ExpectID(t, packets.Pubrec, id)
				pub.Pubrel(id)
				pub.ExpectID(t, packets.Pubcomp, id)
			}
			got := sub.Expect(t, packets.Publish)
			switch qos {
			case 1:
				sub.Puback(got.PacketID)
			case 2:
				sub.Pubrec(got.PacketID)
				sub.ExpectID(t, packets.Pubrel, got.PacketID)
				sub.Pubcomp(got.PacketID)
			}
		}
	}
	refused := f.broker.Dial(t, 5)
	refused.SendConnect("", false, 0, func(pk *packets.Packet) { pk.Properties.AuthenticationMethod = "SCRAM" })
	refused.Expect(t, packets.Connack)
	pub.Ping(t) // every ack above is handled once PINGRESP comes
	sub.Ping(t)
	// The frees of the last acks commit after they are read: scrape until no commit lands between
	// the commit counters and the histograms, which a scrape reads one after the other.
	after := f.scrape(t)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); after = f.scrape(t) {
		commits := after["oncemq_store_commits_total"] - before["oncemq_store_commits_total"]
		records := after["oncemq_store_records_total"] - before["oncemq_store_records_total"]
		if after["oncemq_store_commit_duration_seconds_count"]-before["oncemq_store_commit_duration_seconds_count"] == commits &&
			after["oncemq_store_commit_records_sum"]-before["oncemq_store_commit_records_sum"] == records {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	for qos := byte(0); qos <= 2; qos++ {
		q := strconv.Itoa(int(qos))
		n, bytes := float64(len(sizes[qos])), 0.0
		for _, s := range sizes[qos] {
			bytes += float64(s)
		}
		for _, name := range []string{"oncemq_received_messages_total", "oncemq_sent_messages_total"} {
			checkDelta(t, before, after, name+`{qos="`+q+`"}`, n)
		}
		for _, name := range []string{"oncemq_received_bytes_total", "oncemq_sent_bytes_total"} {
			checkDelta(t, before, after, name+`{qos="`+q+`"}`, bytes)
		}
	}
	checkDelta(t, before, after, "oncemq_connections_accepted_total", 1)
	checkDelta(t, before, after, `oncemq_connections_refused_total{reason="Bad authentication method"}`, 1)
	checkDelta(t, before, after, `oncemq_dropped_messages_total{reason="queue-full"}`, 0)
	checkValue(t, after, `oncemq_sessions{state="online"}`, 2)
	checkValue(t, after, `oncemq_inflight_ids{direction="outbound"}`, 0)
	checkValue(t, after, `oncemq_store_failed`, 0)
	checkValue(t, after, `oncemq_connections{listener="`+f.broker.Addr()+`"}`, 2)
	if after["oncemq_store_commit_duration_seconds_count"] <= before["oncemq_store_commit_duration_seconds_count"] {
		t.Errorf("no commit observed by the latency histogram")
	}
	checkDelta(t, before, after, "oncemq_store_commit_duration_seconds_count",
		after["oncemq_store_commits_total"]-before["oncemq_store_commits_total"])
	checkDelta(t, before, after, "oncemq_store_commit_records_sum",
		after["oncemq_store_records_total"]-before["oncemq_store_records_total"])
	if _, ok := after["go_goroutines"]; !ok {
		t.Errorf("the Go runtime collector's go_goroutines is missing")
	}
}

func checkDelta(t *testing.T, before, after map[string]float64, key string, want float64) {
	t.Helper()
	if _, ok := after[key]; !ok {
		t.Errorf("%s is not in /metrics", key)
		return
	}
	if got := after[key] - before[key]; got != want {
		t.Errorf("%s moved by %v, want %v", key, got, want)
	}
}

func checkValue(t *testing.T, m map[string]float64, key string, want float64) {
	t.Helper()
	if got, ok := m[key]; !ok || got != want {
		t.Errorf("%s = %v (present %t), want %v", key, got, ok, want)
	}
}

// Without a token only /metrics, /healthz and /readyz are served; with one, /admin/... needs it.
func TestAdminAPINeedsTheToken(t *testing.T) {
	t.Parallel()
	open := start(t, Config{})
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if status, body := open.request(t, "GET", path, ""); status != http.StatusOK {
			t.Errorf("GET %s without a token configured: %d %s, want 200", path, status, body)
		}
	}
	for _, path := range []string{"/admin/sessions", "/admin/backup", "/debug/pprof/"} {
		if status, _ := open.request(t, "GET", path, "anything"); status != http.StatusNotFound {
			t.Errorf("GET %s without a token configured: %d, want 404 (not served)", path, status)
		}
	}

	guarded := start(t, Config{Token: testToken, Pprof: true})
	for _, path := range []string{"/admin/sessions", "/admin/sessions/x", "/admin/backup", "/debug/pprof/"} {
		for _, tok := range []string{"", "wrong-token", testToken + "x"} {
			if status, _ := guarded.request(t, "GET", path, tok); status != http.StatusUnauthorized {
				t.Errorf("GET %s with token %q: %d, want 401", path, tok, status)
			}
		}
	}
	if status, _ := guarded.request(t, "DELETE", "/admin/sessions/x", "wrong"); status != http.StatusUnauthorized {
		t.Errorf("DELETE with a wrong token: %d, want 401", status)
	}
	for _, path := range []string{"/admin/sessions", "/debug/pprof/"} {
		if status, body := guarded.request(t, "GET", path, testToken); status != http.StatusOK {
			t.Errorf("GET %s with the token: %d %s, want 200", path, status, body)
		}
	}
	if status, _ := guarded.request(t, "GET", "/metrics", ""); status != http.StatusOK {
		t.Errorf("/metrics must not need the token: %d", status)
	}
}

// The sessions API lists and shows a session with in-flight ids both ways, and DELETE disconnects
// its client and removes it: the client's next CONNECT gets Session Present 0.
func TestSessionsAPIListShowDelete(t *testing.T) {
	t.Parallel()
	f := start(t, Config{Token: testToken})
	sub := f.broker.Dial(t, 5)
	sub.Connect(t, "dev/1", false, 300, mqtttest.ReceiveMaximum(1))
	sub.SubscribeOK(t, 1, "t", 2)
	sub.Publish("up", 2, 7, []byte("x"), false)
	sub.ExpectID(t, packets.Pubrec, 7) // no PUBREL: inbound id 7 awaits it
	pub := f.broker.Dial(t, 5)
	pub.Connect(t, "pub", true, 0)
	for i, p := range []string{"one", "two", "three"} {
		id := uint16(i + 1)
		pub.Publish("t", 2, id, []byte(p), false)
		pub.ExpectID(t, packets.Pubrec, id)
	}
	out := sub.ExpectPublish(t, "t", 2, "one") // in flight; "two" and "three" queued

	status, body := f.request(t, "GET", "/admin/sessions", testToken)
	var list struct{ Sessions []mqtt.SessionInfo }
	if err := json.Unmarshal([]byte(body), &list); status != http.StatusOK || err != nil {
		t.Fatalf("GET /admin/sessions: %d %v\n%s", status, err, body)
	}
	if len(list.Sessions) != 2 || list.Sessions[0].ClientID != "dev/1" || list.Sessions[1].ClientID != "pub" {
		t.Fatalf("GET /admin/sessions lists %+v, want dev/1 and pub", list.Sessions)
	}
	status, body = f.request(t, "GET", "/admin/sessions/dev/1", testToken)
	var one mqtt.SessionInfo
	if err := json.Unmarshal([]byte(body), &one); status != http.StatusOK || err != nil {
		t.Fatalf("GET /admin/sessions/dev/1: %d %v\n%s", status, err, body)
	}
	for _, want := range []string{`"client_id": "dev/1"`, `"online": true`, `"expiry_interval": 300`,
		`"inbound_awaiting_pubrel": [` + "\n    7\n  ]", `"packet_id": ` + strconv.Itoa(int(out.PacketID)), `"state": "publish-sent"`,
		`"queued": 2`, `"queued_bytes": 8`, `"filter": "t"`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /admin/sessions/dev/1 lacks %s:\n%s", want, body)
		}
	}

	if status, body := f.request(t, "DELETE", "/admin/sessions/dev/1", testToken); status != http.StatusNoContent {
		t.Fatalf("DELETE /admin/sessions/dev/1: %d %s", status, body)
	}
	sub.ExpectDisconnect(t, 0x98) // Administrative action
	if status, _ := f.request(t, "GET", "/admin/sessions/dev/1", testToken); status != http.StatusNotFound {
		t.Errorf("GET a deleted session: %d, want 404", status)
	}
	if status, _ := f.request(t, "DELETE", "/admin/sessions/dev/1", testToken); status != http.StatusNotFound {
		t.Errorf("DELETE a deleted session: %d, want 404", status)
	}
	again := f.broker.Dial(t, 5)
	if ack := again.Connect(t, "dev/1", false, 300); ack.SessionPresent {
		t.Fatal("CONNACK Session Present 1 after DELETE, want 0")
	}
}

// /readyz says why the broker is not ready: recovering (no server yet), listener not open.
func TestReadyzReasons(t *testing.T) {
	t.Parallel()
	adm := New(Config{})
	hs := httptest.NewServer(adm.Handler())
	defer hs.Close()
	f := &fixture{admin: adm, http: hs}
	if status, body := f.request(t, "GET", "/readyz", ""); status != http.StatusServiceUnavailable || !strings.Contains(body, "recovering") {
		t.Errorf("/readyz before recovery: %d %q, want 503 recovering", status, body)
	}
	if status, _ := f.request(t, "GET", "/healthz", ""); status != http.StatusOK {
		t.Errorf("/healthz before recovery: %d, want 200", status)
	}
	b := mqtttest.StartBroker(t)
	adm.SetServer(b.Server())
	if status, body := f.request(t, "GET", "/readyz", ""); status != http.StatusServiceUnavailable || !strings.Contains(body, "listener") {
		t.Errorf("/readyz before listening: %d %q, want 503 listener not open", status, body)
	}
	adm.SetListening(true)
	if status, body := f.request(t, "GET", "/readyz", ""); status != http.StatusOK {
		t.Errorf("/readyz when serving: %d %q, want 200", status, body)
	}
}

// The profiler off loopback without a token is refused at start.
func TestCheckExposure(t *testing.T) {
	for _, tc := range []struct {
		addr         string
		token, pprof bool
		ok           bool
	}{
		{"127.0.0.1:9100", false, true, true},
		{"[::1]:9100", false, true, true},
		{"localhost:9100", false, true, true},
		{":9100", false, true, false},
		{"0.0.0.0:9100", false, true, false},
		{"0.0.0.0:9100", true, true, true},
		{"0.0.0.0:9100", false, false, true},
	} {
		if err := CheckExposure(tc.addr, tc.token, tc.pprof); (err == nil) != tc.ok {
			t.Errorf("CheckExposure(%q, token %t, pprof %t) = %v, want ok %t", tc.addr, tc.token, tc.pprof, err, tc.ok)
		}
	}
}
