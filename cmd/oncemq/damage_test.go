package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

// One flipped byte in a queued message's payload, in the real binary's data file: `oncemq serve`
// stops with exit status 1 and a message naming the file, the bucket, the message and the client
// that held it; inspect lists the damage; compact refuses the file; repair gives up that message
// (and prints it), keeps the original, and a broker on the repaired file delivers every other
// message, each intact, once.
func TestDamagedPayloadStopsStartThenRepair(t *testing.T) {
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

	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("serve on a damaged file: %v, want exit status 1; stderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{path, "data file corrupt", "1 damaged records and 1 records that depend on them",
		"bucket msgs key", "checksum mismatch", `(client "sub", queue order`, "which is damaged", "oncemq repair"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("serve's stderr lacks %q:\n%s", want, stderr.String())
		}
	}

	out, errOut, code := runOncemq(t, bin, "inspect", "--data", dir)
	if code != 0 || !strings.Contains(out, "DAMAGED: 2 records") || !strings.Contains(out, "checksum mismatch") {
		t.Errorf("inspect: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	_, errOut, code = runOncemq(t, bin, "compact", "--data", dir)
	if code != 1 || !strings.Contains(errOut, "run oncemq repair") {
		t.Errorf("compact of a damaged file: exit %d, %q; want 1 pointing to repair", code, errOut)
	}

	out, errOut, code = runOncemq(t, bin, "repair", "--data", dir)
	t.Logf("oncemq repair:\n%s", out)
	if code != 0 || !strings.Contains(out, "2 records given up") || !strings.Contains(out, "damaged: bucket msgs key") ||
		!strings.Contains(out, `depends on damage: bucket queue key`) || !strings.Contains(out, "kept: 1 sessions, 1 subscriptions, 0 inbound, 0 outbound, 49 queued, 49 messages") {
		t.Fatalf("repair: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	kept, _ := filepath.Glob(path + ".damaged-*")
	if len(kept) != 1 {
		t.Fatalf("the original is not kept beside the file: %v", kept)
	}
	if orig, err := os.ReadFile(kept[0]); err != nil || !bytes.Equal(orig, file) {
		t.Errorf("%s is not the original (%v)", kept[0], err)
	}

	b = b.Restart(t, nil)
	sub = dialClient(t, b, subOpts)
	got := drain(t, sub, n-1)
	ping(t, sub)
	var want []string
	for i := range n {
		if i != 17 {
			want = append(want, fmt.Sprintf("payload-%d", i))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("delivered after repair:\n%q\nwant every message but payload-17:\n%q", got, want)
	}
	sub.Close()
}
