package main

// Helpers to run the real oncemq binary as a child process: built once per test run, started on a
// free loopback port, killed with SIGKILL and restarted on the same data directory. Crash and
// interop tests use them.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Timeouts for the child process: generous, as they only bound a failure.
const (
	brokerStartTimeout = 20 * time.Second // from exec to "oncemq started"
	brokerExitTimeout  = 20 * time.Second // from the event that ends it to its exit status
)

var oncemqBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// TestMain removes the binary built by buildOncemq. It is the package's only TestMain.
func TestMain(m *testing.M) {
	code := m.Run()
	if oncemqBinary.dir != "" {
		os.RemoveAll(oncemqBinary.dir)
	}
	os.Exit(code)
}

// buildOncemq builds ./cmd/oncemq once per test run (`go build -o DIR/oncemq .`) and returns the
// binary's path.
func buildOncemq(t testing.TB) string {
	t.Helper()
	b := &oncemqBinary
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "oncemq-bin-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "oncemq")
		out, err := exec.Command("go", "build", "-tags", "failpoint", "-o", b.path, ".").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build -o %s .: %v\n%s", b.path, err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("build the oncemq binary: %v", b.err)
	}
	return b.path
}

// brokerProcess is one run of the oncemq binary.
type brokerProcess struct {
	t       testing.TB
	DataDir string
	Addr    string // host:port it listens on
	Host    string
	Port    string

	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned; state is set then
	state  *os.ProcessState

	mu  sync.Mutex // guards log
	log []string   // stderr lines
}

// startBroker runs `oncemq serve` on 127.0.0.1 port 0 with its state in dataDir, and waits until it
// listens. env (ONCEMQ_CRASH_AT=...) is added to the test's environment less its ONCEMQ_* variables
// (brokerEnviron); extra args follow the defaults (a later flag wins). The process is killed in t's cleanup if still running, and its log
// is printed if t failed.
func startBroker(t testing.TB, dataDir string, env []string, args ...string) *brokerProcess {
	t.Helper()
	bin := buildOncemq(t)
	argv := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", dataDir, "--log-level", "info"}, args...)
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(brokerEnviron(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	p := &brokerProcess{t: t, DataDir: dataDir, cmd: cmd, exited: make(chan struct{})}
	listening := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log = append(p.log, line)
			p.mu.Unlock()
			if m := startedLine.FindStringSubmatch(line); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		<-logDone // Wait closes the pipe: read it all first
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("oncemq (pid %d, args %q, env %q) log:\n%s", cmd.Process.Pid, argv, env, p.Log())
		}
	})

	select {
	case addr := <-listening:
		p.Addr = addr
		p.Host, p.Port, _ = strings.Cut(addr, ":")
	case <-p.exited:
		t.Fatalf("oncemq exited before listening (%v):\n%s", p.state, p.Log())
	case <-time.After(brokerStartTimeout):
		t.Fatalf("oncemq did not log %q within %v:\n%s", "oncemq started", brokerStartTimeout, p.Log())
	}
	return p
}

// startedLine is serve's start-up log line; it gives the address bound with port 0.
var startedLine = regexp.MustCompile(`msg="oncemq started" .*\blisten=(127\.0\.0\.1:[0-9]+)`)

// Log is what the process wrote to stderr so far.
func (p *brokerProcess) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// Kill is `kill -9` of the broker, as an operator or the OOM killer would do it; it waits for the
// process to end. A process that has already exited is left as it is.
func (p *brokerProcess) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(brokerExitTimeout):
		p.t.Errorf("oncemq pid %d did not exit within %v of SIGKILL", p.cmd.Process.Pid, brokerExitTimeout)
	}
}

// Running reports whether the process has not exited yet.
func (p *brokerProcess) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// WaitKilled waits for the process to end by SIGKILL, the way an armed crash point ends it, and
// fails t if it exits otherwise or does not exit.
func (p *brokerProcess) WaitKilled(t testing.TB) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(brokerExitTimeout):
		t.Fatalf("oncemq is still running %v after the crash point should have been hit", brokerExitTimeout)
	}
	if err := killedBySIGKILL(p.state); err != nil {
		t.Fatalf("oncemq should have died at the crash point: %v", err)
	}
}

func killedBySIGKILL(st *os.ProcessState) error {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok {
		return fmt.Errorf("exit status %v: not a unix wait status", st)
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return errors.New("it ended with " + st.String() + ", not by SIGKILL")
	}
	return nil
}

// Restart starts the binary again on the same data directory (after Kill or a crash), with env and
// args instead of the old ones: the crash point is not re-armed unless env sets it again.
func (p *brokerProcess) Restart(t testing.TB, env []string, args ...string) *brokerProcess {
	t.Helper()
	if p.Running() {
		t.Fatal("Restart: the previous oncemq is still running")
	}
	return startBroker(t, p.DataDir, env, args...)
}

// A data file that another oncemq holds, or that is not a bbolt file at all, stops start-up with
// exit status 1 and a message naming the file, never an empty broker (DESIGN §5).
func TestStartupRefusesLockedOrCorruptData(t *testing.T) {
	bin := buildOncemq(t)
	run := func(dir string) (string, error) {
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data", dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	held := t.TempDir()
	p := startBroker(t, held, nil)
	defer p.Kill()
	out, err := run(held)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "in use") || !strings.Contains(out, filepath.Join(held, "oncemq.db")) {
		t.Errorf("second broker on a held data file: %v, output %q; want exit 1 naming the file as in use", err, out)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "oncemq.db"), bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run(bad)
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, filepath.Join(bad, "oncemq.db")) {
		t.Errorf("corrupt data file: %v, output %q; want exit 1 naming the file", err, out)
	}
}
