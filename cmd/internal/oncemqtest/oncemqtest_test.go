package oncemqtest

import (
	"net"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBuilds()
	os.Exit(code)
}

// Build builds once per set of tags, whatever their order; another set is another binary.
func TestBuildOncePerTags(t *testing.T) {
	plain := Build(t)
	if again := Build(t); again != plain {
		t.Errorf("second Build: %s, want the first one's %s", again, plain)
	}
	fp := Build(t, "failpoint")
	if fp == plain {
		t.Fatalf("the failpoint build is the plain one: %s", fp)
	}
	if again := Build(t, "failpoint"); again != fp {
		t.Errorf("second failpoint Build: %s, want %s", again, fp)
	}
	for _, bin := range []string{plain, fp} {
		if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s: %v, %v; want an executable", bin, st, err)
		}
	}
}

// StartBroker finds the address bound with port 0 and passes env; Kill and Restart on the same
// data directory work.
func TestStartKillRestart(t *testing.T) {
	dir := t.TempDir()
	b := StartBroker(t, Build(t), dir, []string{"ONCEMQ_MAX_QUEUED=7"})
	c, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatalf("dial %s: %v", b.Addr, err)
	}
	c.Close()
	if !strings.Contains(b.Log(), "max_queued=7") {
		t.Errorf("env not passed to the broker:\n%s", b.Log())
	}
	b.Kill()
	if e := b.Proc().Exit(); b.Running() || !e.Killed() || !e.Requested {
		t.Fatalf("after Kill: running %t, %v", b.Running(), e)
	}
	b2 := b.Restart(t, nil)
	if b2.DataDir != dir || !b2.Running() || strings.Contains(b2.Log(), "max_queued=7") {
		t.Errorf("restart: data %s, running %t; want %s, running, without the first run's env:\n%s", b2.DataDir, b2.Running(), dir, b2.Log())
	}
}

// URLs lists each listener of the start-up line by scheme, with the port it bound.
func TestURLs(t *testing.T) {
	b := StartBroker(t, Build(t), t.TempDir(), nil, "--ws-listen", "127.0.0.1:0", "--ws-listen", "127.0.0.1:0")
	ws := b.URLs("ws")
	if len(ws) != 2 || !strings.HasPrefix(ws[0], "ws://127.0.0.1:") || !strings.HasSuffix(ws[0], "/mqtt") || ws[0] == ws[1] {
		t.Fatalf("ws URLs %q, want two distinct ws://127.0.0.1:PORT/mqtt:\n%s", ws, b.Log())
	}
	if tcp := b.URLs("mqtt"); len(tcp) != 1 || tcp[0] != "mqtt://"+b.Addr {
		t.Errorf("mqtt URLs %q, want [mqtt://%s]", tcp, b.Addr)
	}
}
