package torture

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

// TestMain removes the binaries built by oncemqtest.Build.
func TestMain(m *testing.M) {
	code := m.Run()
	oncemqtest.RemoveBuilds()
	os.Exit(code)
}

// runTortureCaptured runs `oncemq torture args...` with its output captured.
func runTortureCaptured(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(args, cli.Env{Stdout: &o, Stderr: &e, Getenv: func(string) string { return "" }, Version: "test"})
	return code, o.String(), e.String()
}

// tortureJSON runs the torture against bin with a JSON report and returns the report.
func tortureJSON(t *testing.T, bin string, args ...string) (int, string, Report) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "report.json")
	args = append([]string{"--binary", bin, "--json", file, "--settle", "100ms", "--timeout", "2m"}, args...)
	code, out, errOut := runTortureCaptured(t, args...)
	if errOut != "" {
		t.Errorf("stderr: %s", errOut)
	}
	var rep Report
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, data)
	}
	if rep.TempDir != "" {
		t.Cleanup(func() { os.RemoveAll(rep.TempDir) })
	}
	return code, out, rep
}

func TestTortureKillsAndPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker")
	}
	bin := oncemqtest.Build(t)
	code, out, rep := tortureJSON(t, bin, "-p", "2", "-s", "1", "-n", "300", "-k", "3", "--seed", "42")
	if code != 0 || !rep.Pass || !strings.Contains(out, "PASS (seed 42)") {
		t.Fatalf("exit %d, pass %v; want 0 and PASS:\n%s", code, rep.Pass, out)
	}
	if rep.Kills != 3 || rep.Restarts != 4 { // 3 while messages flow and the final one
		t.Errorf("kills %d, restarts %d; want 3 and 4:\n%s", rep.Kills, rep.Restarts, out)
	}
	if n := len(rep.SubscriberLines); n != 1 {
		t.Fatalf("%d subscriber lines, want 1", n)
	}
	s := rep.SubscriberLines[0]
	if s.Expected != 600 || s.Distinct != 600 || s.Delivered != 600 || s.Lost != 0 || s.Duplicated != 0 {
		t.Errorf("subscriber line %+v; want 600 expected, distinct and delivered", s)
	}
	if s.Connections < 2 {
		t.Errorf("the subscriber connected %d times; every kill should make it reconnect", s.Connections)
	}
	if rep.Seed != 42 || rep.TempDir != "" {
		t.Errorf("seed %d, temp dir %q: want 42 and removed after a pass", rep.Seed, rep.TempDir)
	}
}

func TestTortureTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker")
	}
	bin := oncemqtest.Build(t)
	code, out, rep := tortureJSON(t, bin, "-p", "2", "-s", "1", "-n", "300", "-k", "2", "--takeover-every", "50ms", "-w", "4")
	if code != 0 || !rep.Pass {
		t.Fatalf("exit %d, pass %v; want 0 and PASS:\n%s", code, rep.Pass, out)
	}
	var tk *SubscriberResult
	for i := range rep.SubscriberLines {
		if rep.SubscriberLines[i].Takeover {
			tk = &rep.SubscriberLines[i]
		}
	}
	if tk == nil {
		t.Fatalf("no takeover subscriber in the report:\n%s", out)
	}
	if tk.Takeovers == 0 || tk.Distinct != 600 || tk.Duplicated != 0 {
		t.Errorf("takeover subscriber %+v: want takeovers > 0, 600 distinct, no duplicate", *tk)
	}
}

// Shared mode: three members of one group, members leaving and coming back, kills: the group gets
// every message exactly once, spread over the members.
func TestTortureShared(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker")
	}
	bin := oncemqtest.Build(t)
	code, out, rep := tortureJSON(t, bin, "-p", "2", "-n", "1500", "-k", "3", "--shared", "3", "--leave-every", "50ms", "--seed", "7")
	if code != 0 || !rep.Pass {
		t.Fatalf("exit %d, pass %v; want 0 and PASS:\n%s", code, rep.Pass, out)
	}
	var group *SubscriberResult
	members := 0
	for i := range rep.SubscriberLines {
		l := &rep.SubscriberLines[i]
		if l.Name == "group" {
			group = l
			continue
		}
		members++
		if l.Delivered == 0 {
			t.Errorf("%s received nothing: want the messages spread", l.Name)
		}
	}
	if group == nil || members != 3 {
		t.Fatalf("%d member lines and group line %v, want 3 and one:\n%s", members, group, out)
	}
	if group.Expected != 3000 || group.Distinct != 3000 || group.Lost != 0 || group.Duplicated != 0 {
		t.Errorf("group line %+v: want 3000 expected and distinct", *group)
	}
	if rep.Totals.Leaves == 0 {
		t.Errorf("no member left the group gracefully:\n%s", out)
	}
}

// A broker that forgets its state at each restart must fail: the check can fail.
func TestTortureCatchesAForgetfulBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker")
	}
	bin := oncemqtest.Build(t)
	wrapper := filepath.Join(t.TempDir(), "forgetful-oncemq")
	script := "#!/bin/sh\nprev=\nfor a in \"$@\"; do [ \"$prev\" = --data ] && rm -rf \"$a\"; prev=$a; done\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, rep := tortureJSON(t, wrapper, "-p", "1", "-s", "1", "-n", "200", "-k", "1", "--drain-timeout", "2s")
	if code != 1 || rep.Pass || !strings.Contains(out, "FAIL") {
		t.Fatalf("exit %d, pass %v; want 1 and FAIL:\n%s", code, rep.Pass, out)
	}
	if rep.Totals.SessionsLost == 0 {
		t.Errorf("no session lost reported for a broker that deletes its data:\n%s", out)
	}
	if rep.TempDir == "" {
		t.Errorf("a failed run should keep its temporary directory")
	}
}

// A broker that dies by itself (here at a crash point) fails the run, and its log is shown.
func TestTortureCatchesABrokerThatDies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker")
	}
	bin := oncemqtest.Build(t, "failpoint") // crash points exist only in this build
	wrapper := filepath.Join(t.TempDir(), "crashing-oncemq")
	script := "#!/bin/sh\nONCEMQ_CRASH_AT=before-pubrec:50 exec " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, rep := tortureJSON(t, wrapper, "-p", "1", "-s", "1", "-n", "200", "-k", "0")
	if code != 1 || rep.Pass || rep.BrokerDied == "" {
		t.Fatalf("exit %d, pass %v, broker died %q; want 1, FAIL and a death:\n%s", code, rep.Pass, rep.BrokerDied, out)
	}
	if !strings.Contains(out, "crash point armed") {
		t.Errorf("the broker's log is not shown:\n%s", out)
	}
}

func TestTallyCountsDuplicatesAndGaps(t *testing.T) {
	exp := newExpectation(2, 4, nil)
	ta := newTally(2, 4)
	seq := []msgKey{{0, 0}, {0, 1}, {0, 1}, {0, 3}, {1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 3}, {1, 3}}
	for i, k := range seq {
		ta.add(k, delivery{id: uint16(i + 1), conn: 1, run: 1})
	}
	r := ta.result(exp)
	want := SubscriberResult{Expected: 8, Delivered: 10, Distinct: 7, Lost: 1, Duplicated: 3}
	if r.Expected != want.Expected || r.Delivered != want.Delivered || r.Distinct != want.Distinct ||
		r.Lost != want.Lost || r.Duplicated != want.Duplicated {
		t.Fatalf("result %+v, want %+v", r, want)
	}
	if len(r.LostSample) != 1 || r.LostSample[0] != "p0#2" {
		t.Errorf("lost sample %q, want [p0#2]", r.LostSample)
	}
	if len(r.DupSample) != 3 || !strings.HasPrefix(r.DupSample[0], "p0#1 delivered 2 times: first id 2") {
		t.Errorf("duplicate sample %q", r.DupSample)
	}
	r.Name = "sub1"
	pass, why := verdict([]SubscriberResult{r}, nil, "", "")
	if pass {
		t.Fatal("a run with a duplicate and a gap passed")
	}
	if got := strings.Join(why, "; "); !strings.Contains(got, "1 messages lost") || !strings.Contains(got, "3 messages duplicated") {
		t.Errorf("failures %q should name the loss and the duplicates", got)
	}
}

func TestVerdict(t *testing.T) {
	clean := SubscriberResult{Name: "sub1", Expected: 4, Delivered: 4, Distinct: 4}
	pub := PublisherResult{Name: "pub1", Messages: 4, Completed: 4}
	tests := []struct {
		name     string
		sub      func(*SubscriberResult)
		pub      func(*PublisherResult)
		died     string
		aborted  string
		pass     bool
		mentions string
	}{
		{name: "clean", pass: true},
		{name: "lost", sub: func(s *SubscriberResult) { s.Lost = 1 }, mentions: "lost"},
		{name: "duplicated", sub: func(s *SubscriberResult) { s.Duplicated = 1 }, mentions: "duplicated"},
		{name: "subscriber session lost", sub: func(s *SubscriberResult) { s.SessionsLost = 1 }, mentions: "session lost"},
		{name: "publisher session lost", pub: func(p *PublisherResult) { p.SessionsLost = 1 }, mentions: "session lost"},
		{name: "refused", pub: func(p *PublisherResult) { p.Refused, p.Completed = 1, 3 }, mentions: "refused"},
		{name: "incomplete", pub: func(p *PublisherResult) { p.Completed = 3 }, mentions: "only 3 of 4"},
		{name: "corrupt", sub: func(s *SubscriberResult) { s.Corrupt = 1 }, mentions: "corrupt"},
		{name: "protocol error", sub: func(s *SubscriberResult) { s.ProtocolErrors = 1 }, mentions: "protocol errors"},
		{name: "died", died: "signal: segmentation fault", mentions: "died on its own"},
		{name: "aborted", aborted: "timeout", mentions: "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, p := clean, pub
			if tt.sub != nil {
				tt.sub(&s)
			}
			if tt.pub != nil {
				tt.pub(&p)
			}
			pass, why := verdict([]SubscriberResult{s}, []PublisherResult{p}, tt.died, tt.aborted)
			if pass != tt.pass {
				t.Fatalf("pass %v, want %v (%q)", pass, tt.pass, why)
			}
			if tt.mentions != "" && !strings.Contains(strings.Join(why, "; "), tt.mentions) {
				t.Errorf("failures %q lack %q", why, tt.mentions)
			}
		})
	}
}

func TestTallyRefusedMessages(t *testing.T) {
	exp := newExpectation(1, 3, map[msgKey]byte{{0, 1}: 0x97})
	ta := newTally(1, 3)
	ta.add(msgKey{0, 0}, delivery{})
	ta.add(msgKey{0, 2}, delivery{})
	if r := ta.result(exp); r.Expected != 2 || r.Lost != 0 || r.Unexpected != 0 {
		t.Errorf("result %+v: a refused message is not expected", r)
	}
	ta.add(msgKey{0, 1}, delivery{})
	if r := ta.result(exp); r.Unexpected != 1 {
		t.Errorf("result %+v: a refused message delivered anyway is unexpected", r)
	}
	ta.add(msgKey{3, 0}, delivery{})
	if r := ta.result(exp); r.Corrupt != 1 {
		t.Errorf("result %+v: a message of no publisher is corrupt", r)
	}
}

func TestPayload(t *testing.T) {
	for _, size := range []int{8, 16, 300} {
		b := encodePayload(3, 12345, size)
		if len(b) != size {
			t.Fatalf("payload of %d bytes, want %d", len(b), size)
		}
		pub, seq, err := decodePayload(b)
		if err != nil || pub != 3 || seq != 12345 {
			t.Fatalf("decode: %d %d %v", pub, seq, err)
		}
		if size > payloadHeader {
			b[len(b)-1]++
			if _, _, err := decodePayload(b); !errors.Is(err, errBadPayload) {
				t.Errorf("a corrupt payload decodes: %v", err)
			}
		}
	}
	if _, _, err := decodePayload([]byte{1, 2}); !errors.Is(err, errBadPayload) {
		t.Errorf("a short payload decodes: %v", err)
	}
}

func publishPk(topic string, id uint16, payload []byte, dup bool) packets.Packet {
	return mqttclient.Publish(topic, 2, id, payload, dup)
}

// The subscriber's side of exactly-once: a redelivery of an id awaiting PUBREL is answered and
// not counted; once PUBREL freed the id, the same message again is a duplicate.
func TestSubscriberCountsOnce(t *testing.T) {
	env := &clientEnv{start: time.Now(), progress: func() {}, run: func() int { return 1 }}
	s := newSubscriber(env, "sub1", "c", 0, 2, 1, 10, 1, 0)
	must := func(pk packets.Packet, wantType byte, wantID uint16, wantReason byte) {
		t.Helper()
		replies, err := s.handle(pk, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(replies) != 1 || replies[0].FixedHeader.Type != wantType || replies[0].PacketID != wantID || replies[0].ReasonCode != wantReason {
			t.Fatalf("%s answered with %v, want type %d id %d reason 0x%02X", mqttclient.Describe(pk), replies, wantType, wantID, wantReason)
		}
	}
	p0 := encodePayload(0, 0, 16)
	must(publishPk("torture/p0", 5, p0, false), packets.Pubrec, 5, 0)
	must(publishPk("torture/p0", 5, p0, true), packets.Pubrec, 5, 0) // redelivery
	must(mqttclient.Ack(packets.Pubrel, 5, 0), packets.Pubcomp, 5, 0)
	must(mqttclient.Ack(packets.Pubrel, 5, 0), packets.Pubcomp, 5, 0x92) // PUBREL again after a reconnect
	exp := newExpectation(1, 10, nil)
	if r := s.result(exp); r.Delivered != 1 || r.Duplicated != 0 || r.Redeliveries != 1 || r.ProtocolErrors != 0 {
		t.Fatalf("after one message and its redelivery: %+v", r)
	}
	must(publishPk("torture/p0", 6, p0, true), packets.Pubrec, 6, 0) // the broker forgot it was done
	if r := s.result(exp); r.Delivered != 2 || r.Duplicated != 1 || len(r.DupSample) != 1 {
		t.Fatalf("a message delivered again after PUBREL is not a duplicate: %+v", r)
	}
	// Receive Maximum 2: a third delivery while two await PUBREL is the broker's error.
	must(publishPk("torture/p0", 7, encodePayload(0, 1, 16), false), packets.Pubrec, 7, 0)
	must(publishPk("torture/p0", 8, encodePayload(0, 2, 16), false), packets.Pubrec, 8, 0)
	if r := s.result(exp); r.ProtocolErrors != 1 {
		t.Errorf("Receive Maximum exceeded is not reported: %+v", r)
	}
	// A redelivered id carrying another message, a misrouted or corrupt payload.
	must(publishPk("torture/p0", 8, encodePayload(0, 3, 16), true), packets.Pubrec, 8, 0)
	must(publishPk("torture/p1", 9, encodePayload(0, 4, 16), false), packets.Pubrec, 9, 0)
	if r := s.result(exp); r.ProtocolErrors != 3 || r.Corrupt != 1 {
		t.Errorf("want 3 protocol errors and 1 corrupt delivery: %+v", r)
	}
}

// The publisher's side: resend in the original order with DUP=1 and the same ids, PUBREL for what
// got its PUBREC; a refusal ends the flow and is counted.
func TestPublisherResends(t *testing.T) {
	env := &clientEnv{start: time.Now(), progress: func() {}, run: func() int { return 1 }}
	p := newPublisher(env, 0, 4, 3, 16, 1)
	var sent []packets.Packet
	for range 3 {
		sent = append(sent, p.publishNew())
	}
	for i, pk := range sent {
		if pk.PacketID != uint16(i+1) || pk.FixedHeader.Dup || pk.FixedHeader.Qos != 2 {
			t.Fatalf("first send %d: %s", i, mqttclient.Describe(pk))
		}
	}
	replies, err := p.handle(mqttclient.Ack(packets.Pubrec, 2, 0))
	if err != nil || len(replies) != 1 || replies[0].FixedHeader.Type != packets.Pubrel || replies[0].PacketID != 2 {
		t.Fatalf("PUBREC 2 answered with %v, %v", replies, err)
	}
	// Connection lost here.
	got := p.resend()
	want := []string{
		mqttclient.Describe(mqttclient.Publish("torture/p0", 2, 1, encodePayload(0, 0, 16), true)),
		mqttclient.Describe(mqttclient.Publish("torture/p0", 2, 3, encodePayload(0, 2, 16), true)),
		mqttclient.Describe(mqttclient.Ack(packets.Pubrel, 2, 0)),
	}
	if len(got) != len(want) {
		t.Fatalf("resent %d packets, want %d", len(got), len(want))
	}
	for i := range got {
		if d := mqttclient.Describe(got[i]); d != want[i] {
			t.Errorf("resend %d: %s, want %s", i, d, want[i])
		}
	}
	if _, err := p.handle(mqttclient.Ack(packets.Pubcomp, 2, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.handle(mqttclient.Ack(packets.Pubrec, 1, 0x97)); err != nil {
		t.Fatal(err)
	}
	if p.res.Completed != 1 || p.res.Refused != 1 || p.refused[msgKey{0, 0}] != 0x97 || len(p.inflight) != 1 {
		t.Errorf("completed %d refused %d (%v), %d in flight; want 1, 1 (p0#0: 0x97), 1", p.res.Completed, p.res.Refused, p.refused, len(p.inflight))
	}
	if _, err := p.handle(mqttclient.Ack(packets.Pubcomp, 3, 0)); err != nil || p.res.ProtocolErrors != 1 {
		t.Errorf("PUBCOMP before PUBREC: err %v, protocol errors %d; want 1", err, p.res.ProtocolErrors)
	}
	if _, err := p.handle(mqttclient.Disconnect(0x8B)); err == nil {
		t.Error("a DISCONNECT from the broker does not end the connection")
	}
}

func TestParseTortureConfig(t *testing.T) {
	cfg, err := parseOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Publishers != 4 || cfg.Subscribers != 2 || cfg.Messages != 2000 || cfg.Window != 16 || cfg.Kills != 10 ||
		cfg.Sync != "always" || cfg.Timeout != 10*time.Minute || cfg.Seed == 0 || cfg.TakeoverSubscribers != 0 {
		t.Errorf("defaults %+v", cfg)
	}
	cfg, err = parseOptions([]string{"-p", "3", "--subscribers", "5", "-n", "7", "-w", "2", "-k", "0", "--seed", "9",
		"--takeover-every", "300ms", "--sync", "none", "--json", "r.json"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Publishers != 3 || cfg.Subscribers != 5 || cfg.Messages != 7 || cfg.Window != 2 || cfg.Kills != 0 || cfg.Seed != 9 ||
		cfg.TakeoverEvery != 300*time.Millisecond || cfg.TakeoverSubscribers != 1 || cfg.Sync != "none" || cfg.JSON != "r.json" {
		t.Errorf("parsed %+v", cfg)
	}
	if _, err := parseOptions([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	for _, bad := range [][]string{{"-p", "0"}, {"-w", "0"}, {"--sync", "fsync"}, {"-k", "-1"}, {"--payload", "4"},
		{"--bogus"}, {"stray"}, {"-s", "0"}, {"--broker-log-level", "loud"}} {
		if _, err := parseOptions(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	code, out, _ := runTortureCaptured(t, "--help")
	if code != 0 || !strings.Contains(out, "--takeover-every") || !strings.Contains(out, "-k, --kills") {
		t.Errorf("--help: exit %d, output %q", code, out)
	}
	if code, _, errOut := runTortureCaptured(t, "-p", "x"); code != 2 || !strings.Contains(errOut, "oncemq torture --help") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errOut)
	}
}
