//go:build unix

package childproc

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

const waitLimit = 10 * time.Second // only a failure waits this long

func startSh(t *testing.T, script string, out *Buffer) *Proc {
	t.Helper()
	s := Spec{Path: "/bin/sh", Args: []string{"-c", script}}
	if out != nil {
		s.Output = out
	}
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Kill(waitLimit) })
	return p
}

func TestExitOnItsOwn(t *testing.T) {
	var out Buffer
	p := startSh(t, "echo to-stdout; echo to-stderr >&2; exit 3", &out)
	e, err := p.Wait(waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	if e.Code != 3 || e.Signal != 0 || e.Requested || e.Clean() || e.Killed() || e.Pid != p.Pid() {
		t.Errorf("exit %+v: want code 3, no signal, not requested", e)
	}
	if got := out.String(); got != "to-stdout\nto-stderr\n" {
		t.Errorf("output %q: want both streams, in order", got)
	}
	if p.Running() {
		t.Error("Running after the end")
	}
}

func TestKillAndStop(t *testing.T) {
	p := startSh(t, "exec sleep 30", nil)
	e, err := p.Kill(waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Killed() || !e.Requested || e.Code != -1 || !strings.Contains(e.String(), "killed") {
		t.Errorf("after Kill: %+v (%v); want killed by SIGKILL, requested", e, e)
	}

	// A shell that exits 0 on SIGTERM, paused with SIGSTOP first: Stop must still end it cleanly.
	var out Buffer
	p = startSh(t, `trap 'exit 0' TERM; echo ready; while :; do sleep 0.02; done`, &out)
	if _, err := out.WaitMatch(regexp.MustCompile("ready"), waitLimit, p.Done()); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if e, err := p.Wait(100 * time.Millisecond); err == nil {
		t.Fatalf("a stopped process ended: %v", e)
	}
	e, err = p.Stop(waitLimit)
	if err != nil || !e.Clean() || !e.Requested {
		t.Errorf("Stop: %v, %+v; want a clean, requested exit", err, e)
	}
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	var out Buffer
	p := startSh(t, `trap '' TERM; echo ready; while :; do sleep 0.02; done`, &out)
	if _, err := out.WaitMatch(regexp.MustCompile("ready"), waitLimit, p.Done()); err != nil {
		t.Fatal(err)
	}
	e, err := p.Stop(200 * time.Millisecond)
	if err == nil || !e.Killed() {
		t.Errorf("Stop of a process ignoring SIGTERM: %v, %v; want an error and SIGKILL", err, e)
	}
}

func TestWaitAccepting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := startSh(t, "exec sleep 30", nil)
	if err := p.WaitAccepting(context.Background(), ln.Addr().String(), waitLimit); err != nil {
		t.Errorf("a listening port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := p.WaitAccepting(context.Background(), addr, 100*time.Millisecond); err == nil {
		t.Error("a closed port accepts")
	}
	dead := startSh(t, "exit 7", nil)
	err = dead.WaitAccepting(context.Background(), addr, waitLimit)
	if err == nil || !strings.Contains(err.Error(), "exit status 7") {
		t.Errorf("a process that exits: %v; want its exit status", err)
	}
}

func TestLogPathAndEnv(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	if err := os.WriteFile(log, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out Buffer
	t.Setenv("CHILDPROC_TEST_DROPPED", "x")
	env := append(EnvironWithout("CHILDPROC_TEST_"), "CHILDPROC_KEPT=y")
	p, err := Start(Spec{Path: "/bin/sh", Args: []string{"-c", `echo "[$CHILDPROC_TEST_DROPPED][$CHILDPROC_KEPT]"; pwd`},
		Env: env, Dir: t.TempDir(), Output: &out, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := p.Wait(waitLimit); err != nil || !e.Clean() {
		t.Fatalf("%v %v", e, err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "before\n[][y]\n") || !strings.HasSuffix(string(data), out.String()) {
		t.Errorf("log %q, buffer %q: want the output appended to the log and in the buffer", data, out.String())
	}
}

func TestWaitMatchGivesUp(t *testing.T) {
	var out Buffer
	p := startSh(t, "echo started at 127.0.0.1:4242", &out)
	m, err := out.WaitMatch(regexp.MustCompile(`started at (\S+)`), waitLimit, p.Done())
	if err != nil || m[1] != "127.0.0.1:4242" {
		t.Fatalf("match %q, %v", m, err)
	}
	if _, err := out.WaitMatch(regexp.MustCompile("never"), waitLimit, p.Done()); err == nil {
		t.Error("a pattern that never comes matched")
	}
	if _, err := new(Buffer).WaitMatch(regexp.MustCompile("x"), 50*time.Millisecond, nil); err == nil {
		t.Error("an empty buffer matched")
	}
}
