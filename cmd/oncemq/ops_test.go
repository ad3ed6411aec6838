package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/inspect"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

const opsTimeout = 10 * time.Second

// dialClient connects a 5.0 client to b and fails t otherwise.
func dialClient(t *testing.T, b *oncemqtest.Broker, o mqttclient.ConnectOptions) *mqttclient.Conn {
	t.Helper()
	c, err := mqttclient.Dial(context.Background(), b.Addr, opsTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", b.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Connect(o, opsTimeout); err != nil {
		t.Fatalf("connect %q: %v", o.ClientID, err)
	}
	return c
}

// expect reads the next packet from c and fails t unless it has type typ.
func expect(t *testing.T, c *mqttclient.Conn, typ byte) packets.Packet {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(opsTimeout))
	pk, err := c.Read()
	if err != nil {
		t.Fatalf("expected %s: %v", packets.PacketNames[typ], err)
	}
	if pk.FixedHeader.Type != typ {
		t.Fatalf("expected %s, got %s", packets.PacketNames[typ], mqttclient.Describe(pk))
	}
	return pk
}

func write(t *testing.T, c *mqttclient.Conn, pks ...packets.Packet) {
	t.Helper()
	if err := c.Write(pks...); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// runOncemq runs the binary with args and returns its stdout, stderr and exit code.
func runOncemq(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitCode()
	}
	t.Fatalf("run oncemq %q: %v", args, err)
	return "", "", 0
}

// mosquitto_sub on $SYS/broker/clients/connected sees the count rise as clients connect, and its
// first message is the retained value, at once.
func TestSysClientsConnectedWithMosquittoSub(t *testing.T) {
	requireMosquitto(t)
	b := startBroker(t, t.TempDir(), nil, "--sys-interval", "1s")
	sub := startMosquittoSub(t, b, "mqttv311", "-t", "$SYS/broker/clients/connected", "-W", "20")
	values := func() []mqttMessage {
		sub.mu.Lock()
		defer sub.mu.Unlock()
		return slices.Clone(sub.msgs)
	}
	deadline := time.Now().Add(opsTimeout)
	for len(values()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if v := values(); len(v) == 0 || v[0].Retain != "1" {
		t.Fatalf("first message %v: want the retained value at once\n%s", v, sub.output())
	}
	for i := range 2 {
		dialClient(t, b, mqttclient.ConnectOptions{ClientID: fmt.Sprintf("extra%d", i), CleanStart: true})
	}
	for time.Now().Before(deadline) {
		v := values()
		if v[len(v)-1].Payload == "3" && v[len(v)-1].Retain == "0" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("clients/connected never reached 3 (the subscriber and two clients): %v", values())
}

// inspect prints, field by field, the sessions a killed broker left: subscriptions, the inbound
// id awaiting PUBREL, the outbound id in flight and the queue. While the broker runs it refuses
// and names the admin API.
func TestInspectKnownSessions(t *testing.T) {
	bin := oncemqtest.Build(t)
	dir := t.TempDir()
	b := oncemqtest.StartBroker(t, bin, dir, nil)
	sub := dialClient(t, b, mqttclient.ConnectOptions{ClientID: "sub", SessionExpiry: 3600, ReceiveMaximum: 1})
	write(t, sub, mqttclient.Subscribe(1, "t/#", 2))
	expect(t, sub, packets.Suback)
	pub := dialClient(t, b, mqttclient.ConnectOptions{ClientID: "pub", SessionExpiry: 600})
	for id := uint16(1); id <= 3; id++ { // one in flight to sub (Receive Maximum 1), two queued
		write(t, pub, mqttclient.Publish("t/x", 2, id, []byte("12345"), false))
		expect(t, pub, packets.Pubrec)
	}
	write(t, pub, mqttclient.Ack(packets.Pubrel, 1, 0), mqttclient.Ack(packets.Pubrel, 2, 0))
	expect(t, pub, packets.Pubcomp)
	expect(t, pub, packets.Pubcomp) // id 3 still awaits PUBREL
	first := expect(t, sub, packets.Publish)

	_, stderr, code := runOncemq(t, bin, "inspect", "--data", dir)
	if code != 1 || !strings.Contains(stderr, "running broker") || !strings.Contains(stderr, "/admin/sessions") {
		t.Errorf("inspect of a held file: exit %d, %q; want 1 naming the running broker and /admin/sessions", code, stderr)
	}
	b.Kill()

	out, stderr, code := runOncemq(t, bin, "inspect", "--data", dir, "--json")
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	var rep inspect.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, out)
	}
	anonymous := "" // the owner these clients, without a username, gave their sessions
	want := []inspect.Session{
		{ClientID: "pub", Username: &anonymous, ProtocolVersion: 5, ExpiryInterval: 600, Subscriptions: []string{},
			InboundAwaiting: []uint16{3}, Outbound: []inspect.Outbound{}},
		{ClientID: "sub", Username: &anonymous, ProtocolVersion: 5, ExpiryInterval: 3600, Subscriptions: []string{"t/# qos=2"},
			InboundAwaiting: []uint16{}, Outbound: []inspect.Outbound{{PacketID: first.PacketID, State: "publish-sent", QoS: 2}},
			Queued: 2, QueuedBytes: 10},
	}
	if got, _ := json.Marshal(rep.Sessions); string(got) != mustJSON(t, want) {
		t.Errorf("sessions\n got %s\nwant %s", got, mustJSON(t, want))
	}
	st, _ := os.Stat(filepath.Join(dir, "oncemq.db"))
	if rep.Retained != 0 || rep.FileSize != st.Size() || rep.PageSize == 0 {
		t.Errorf("retained %d, file size %d (file has %d), page size %d", rep.Retained, rep.FileSize, st.Size(), rep.PageSize)
	}

	text, _, code := runOncemq(t, bin, "inspect", "--data", dir, "--client", "sub")
	for _, line := range []string{`session "sub"`, "subscriptions:   t/# qos=2", "queued:          2 messages, 10 bytes",
		fmt.Sprintf("outbound in flight:      %d publish-sent qos=2", first.PacketID), "online:          n/a"} {
		if code != 0 || !strings.Contains(text, line) {
			t.Errorf("inspect --client sub (exit %d) lacks %q:\n%s", code, line, text)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// publishQoS1 publishes n QoS 1 messages "prefix-i" on topic t, pipelined, and waits for every
// PUBACK.
func publishQoS1(t *testing.T, c *mqttclient.Conn, topic, prefix string, n int) {
	t.Helper()
	const window = 500
	for start := 0; start < n; start += window {
		var pks []packets.Packet
		for i := start; i < min(start+window, n); i++ {
			pks = append(pks, mqttclient.Publish(topic, 1, uint16(i%window+1), fmt.Appendf(nil, "%s-%d", prefix, i), false))
		}
		write(t, c, pks...)
		for range pks {
			expect(t, c, packets.Puback)
		}
	}
}

// drain reads n QoS 1 PUBLISHes on c, acknowledging each, and returns their payloads.
func drain(t *testing.T, c *mqttclient.Conn, n int) []string {
	t.Helper()
	var got []string
	for range n {
		pk := expect(t, c, packets.Publish)
		got = append(got, string(pk.Payload))
		write(t, c, mqttclient.Ack(packets.Puback, pk.PacketID, 0))
	}
	return got
}

// compact shrinks a file that held 20,000 queued messages, refuses while a broker holds the file,
// and a broker started on the compacted file delivers the messages still queued, each once.
func TestCompactThenRecover(t *testing.T) {
	bin := oncemqtest.Build(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "oncemq.db")
	args := []string{"--max-queued", "30000", "--sync", "none"}
	b := oncemqtest.StartBroker(t, bin, dir, nil, args...)
	subOpts := mqttclient.ConnectOptions{ClientID: "sub", SessionExpiry: 3600}
	sub := dialClient(t, b, subOpts)
	write(t, sub, mqttclient.Subscribe(1, "q", 1))
	expect(t, sub, packets.Suback)
	sub.Close()
	pub := dialClient(t, b, mqttclient.ConnectOptions{ClientID: "pub", CleanStart: true})
	publishQoS1(t, pub, "q", "burst", 20000)
	// The queue goes into the file (not only the store's log) by a restart, which replays the log.
	pub.Close()
	b.Kill()
	b = b.Restart(t, nil, args...)
	pub = dialClient(t, b, mqttclient.ConnectOptions{ClientID: "pub", CleanStart: true})
	sub = dialClient(t, b, subOpts)
	drain(t, sub, 20000)
	ping(t, sub) // every PUBACK read; the commits that follow come after theirs
	sub.Close()
	publishQoS1(t, pub, "q", "kept", 100)

	_, stderr, code := runOncemq(t, bin, "compact", "--data", dir)
	if code != 1 || !strings.Contains(stderr, "running broker") {
		t.Errorf("compact of a held file: exit %d, %q; want 1 saying a running broker holds it", code, stderr)
	}
	b.Kill()

	st0, _ := os.Stat(path)
	out, stderr, code := runOncemq(t, bin, "compact", "--data", dir)
	st1, _ := os.Stat(path)
	if code != 0 || st1.Size() >= st0.Size() {
		t.Fatalf("compact: exit %d (%s), size %d -> %d, want smaller", code, stderr, st0.Size(), st1.Size())
	}
	if want := fmt.Sprintf("%d bytes before, %d after", st0.Size(), st1.Size()); !strings.Contains(out, want) {
		t.Errorf("compact printed %q, want %q", out, want)
	}
	t.Logf("compacted %d -> %d bytes", st0.Size(), st1.Size())
	if _, err := os.Stat(path + ".compact"); !os.IsNotExist(err) {
		t.Errorf("the copy %s.compact is left behind: %v", path, err)
	}

	b = b.Restart(t, nil, args...)
	sub = dialClient(t, b, subOpts)
	got := drain(t, sub, 100)
	for i, p := range got {
		if want := fmt.Sprintf("kept-%d", i); p != want {
			t.Fatalf("message %d after compaction: %q, want %q", i, p, want)
		}
	}
	ping(t, sub) // and no more messages before the PINGRESP
}

// ping sends PINGREQ and fails t unless the next packet is PINGRESP.
func ping(t *testing.T, c *mqttclient.Conn) {
	t.Helper()
	write(t, c, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	expect(t, c, packets.Pingresp)
}
