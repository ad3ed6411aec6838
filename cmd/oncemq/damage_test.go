package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

// One flipped byte in a queued message's payload, in the real binary's data file. Start-up reads no
// body (its checksum is checked when it is read to be sent), so `oncemq serve` starts: the
// subscriber gets every other message, each intact, once, and not the damaged one, which the
// broker drops and logs naming the client and the message. On a copy of the same file, inspect
// lists the damage, compact refuses the file, repair gives up that message (and prints it) and
// keeps the original, and a broker on the repaired file starts clean and delivers every other
// message once.
func TestDamagedPayloadFoundWhenSentThenRepair(t *testing.T) {
	bin := oncemqtest.Build(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "oncemq.db")
	b := oncemqtest.StartBroker(t, bin, dir, nil)
	subOpts := mqttclient.ConnectOptions{ClientID: "sub", SessionExpiry: 3600}
	sub := dialClient(t, b, subOpts)
	write(t, sub, mqttclient.Subscribe(1, "q", 1))
	expect(t, sub, packets.Suback)
	sub.Close()
	pub := dialClient(t, b, mqttclient.ConnectOptions{ClientID: "pub", CleanStart: true})
	const n = 50
	publishQoS1(t, pub, "q", "payload", n) // payloads payload-0 .. payload-49
	pub.Close()
	// A clean stop checkpoints the log into the file, where the damage is made below.
	if _, err := b.Proc().Stop(oncemqtest.ExitTimeout); err != nil {
		t.Fatalf("stop oncemq: %v", err)
	}

	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	victim := []byte("payload-17")
	flips := 0
	for i := 0; ; {
		j := bytes.Index(file[i:], victim)
		if j < 0 {
			break
		}
		file[i+j+len(victim)-1] ^= 0x04 // payload-17 becomes payload-13 on disk
		i += j + 1
		flips++
	}
	if flips == 0 {
		t.Fatal("payload-17 not found in the data file")
	}
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}

	// A copy of the damaged directory for the offline tools: the broker below drops the damaged
	// message, deleting it from its file.
	offline := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(offline, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for i := range n {
		if i != 17 {
			want = append(want, fmt.Sprintf("payload-%d", i))
		}
	}
	slices.Sort(want)

	out, errOut, code := runOncemq(t, bin, "inspect", "--data", offline)
	if code != 0 || !strings.Contains(out, "DAMAGED: 2 records") || !strings.Contains(out, "checksum mismatch") {
		t.Errorf("inspect: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	victimSeq := regexp.MustCompile(`bucket msgs key "[^"]*" \(message (\d+)\): checksum mismatch`).FindStringSubmatch(out)
	if victimSeq == nil {
		t.Fatalf("inspect does not name the damaged body's message:\n%s", out)
	}

	b = b.Restart(t, nil)
	sub = dialClient(t, b, subOpts)
	got := drain(t, sub, n-1)
	ping(t, sub) // nothing more: the damaged message is not sent
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("delivered from the damaged file:\n%q\nwant every message but payload-17:\n%q", got, want)
	}
	sub.Close()
	logged := b.Log()
	for _, w := range []string{"message body unreadable: dropped", "client=sub", "seq=" + victimSeq[1], "bucket msgs key", "checksum mismatch"} {
		if !strings.Contains(logged, w) {
			t.Errorf("the broker's log lacks %q:\n%s", w, logged)
		}
	}

	_, errOut, code = runOncemq(t, bin, "compact", "--data", offline)
	if code != 1 || !strings.Contains(errOut, "run oncemq repair") {
		t.Errorf("compact of a damaged file: exit %d, %q; want 1 pointing to repair", code, errOut)
	}
	out, errOut, code = runOncemq(t, bin, "repair", "--data", offline)
	t.Logf("oncemq repair:\n%s", out)
	if code != 0 || !strings.Contains(out, "2 records given up") || !strings.Contains(out, "damaged: bucket msgs key") ||
		!strings.Contains(out, `depends on damage: bucket queue key`) || !strings.Contains(out, "kept: 1 sessions, 1 subscriptions, 0 inbound, 0 outbound, 49 queued, 49 messages") {
		t.Fatalf("repair: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	offlinePath := filepath.Join(offline, "oncemq.db")
	kept, _ := filepath.Glob(offlinePath + ".damaged-*")
	if len(kept) != 1 {
		t.Fatalf("the original is not kept beside the file: %v", kept)
	}
	if orig, err := os.ReadFile(kept[0]); err != nil || !bytes.Equal(orig, file) {
		t.Errorf("%s is not the original (%v)", kept[0], err)
	}

	repaired := oncemqtest.StartBroker(t, bin, offline, nil)
	sub = dialClient(t, repaired, subOpts)
	got = drain(t, sub, n-1)
	ping(t, sub)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("delivered after repair:\n%q\nwant every message but payload-17:\n%q", got, want)
	}
	sub.Close()
	if strings.Contains(repaired.Log(), "unreadable") {
		t.Errorf("the broker on the repaired file found an unreadable body:\n%s", repaired.Log())
	}
}
