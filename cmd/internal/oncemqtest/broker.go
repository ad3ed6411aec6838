package oncemqtest

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncemq/oncemq/cmd/internal/childproc"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// Timeouts for the child process: generous, as they only bound a failure.
const (
	StartTimeout = 20 * time.Second // from exec to "oncemq started"
	ExitTimeout  = 20 * time.Second // from the event that ends it to its exit status
)

// Broker is one run of `oncemq serve` as a child process.
type Broker struct {
	DataDir string
	Addr    string // host:port it listens on
	Host    string
	Port    string

	bin  string
	argv []string
	env  []string
	proc *childproc.Proc
	out  childproc.Buffer // stdout and stderr
	t    testing.TB
}

// startedLine is serve's start-up log line; it gives the address bound with port 0.
var startedLine = regexp.MustCompile(`msg="oncemq started" .*\blisten=(127\.0\.0\.1:[0-9]+)`)

// StartBroker runs `bin serve` on 127.0.0.1 port 0 with its state in dataDir and waits until it
// listens. env (ONCEMQ_CRASH_AT=...) is added to the test's environment less its ONCEMQ_*
// variables; args follow the defaults (a later flag wins). The process is killed in t's cleanup if
// still running, the store it left is checked (mqtttest.CheckStore: a SIGKILLed broker must leave a
// consistent file too), and its output is logged if t failed.
func StartBroker(t testing.TB, bin, dataDir string, env []string, args ...string) *Broker {
	t.Helper()
	b := &Broker{DataDir: dataDir, bin: bin, env: env, t: t,
		argv: append([]string{"serve", "--listen", "127.0.0.1:0", "--data", dataDir, "--log-level", "info"}, args...)}
	proc, err := childproc.Start(childproc.Spec{
		Path:   bin,
		Args:   b.argv,
		Env:    append(childproc.EnvironWithout("ONCEMQ_"), env...),
		Output: &b.out,
	})
	if err != nil {
		t.Fatal(err)
	}
	b.proc = proc
	t.Cleanup(func() {
		b.Kill()
		if b.proc.Exit().Killed() || b.proc.Exit().Clean() {
			mqtttest.CheckStore(t, dataDir)
		}
		if t.Failed() {
			t.Logf("oncemq (pid %d, args %q, env %q) output:\n%s", proc.Pid(), b.argv, env, b.Log())
		}
	})
	m, err := b.out.WaitMatch(startedLine, StartTimeout, proc.Done())
	if err != nil {
		state := "still running"
		if !proc.Running() {
			state = proc.Exit().String()
		}
		t.Fatalf("oncemq did not start (%v; %s):\n%s", err, state, b.Log())
	}
	b.Addr = m[1]
	b.Host, b.Port, _ = strings.Cut(b.Addr, ":")
	return b
}

// listenersAttr is the listeners attribute of the start-up line: the URL of every listener.
var listenersAttr = regexp.MustCompile(`msg="oncemq started" .*\blisteners=(?:"([^"]*)"|(\S+))`)

// URLs are the URLs of the broker's listeners of the given scheme (mqtt, mqtts, ws, wss) as its
// start-up line lists them, in the order of its flags: "mqtts://127.0.0.1:41234",
// "ws://127.0.0.1:41235/mqtt".
func (b *Broker) URLs(scheme string) []string {
	m := listenersAttr.FindStringSubmatch(b.Log())
	if m == nil {
		return nil
	}
	var urls []string
	for _, u := range strings.Fields(m[1] + m[2]) {
		if strings.HasPrefix(u, scheme+"://") {
			urls = append(urls, u)
		}
	}
	return urls
}

// Proc is the child process: its pid, signals, and how it ended.
func (b *Broker) Proc() *childproc.Proc { return b.proc }

// Log is what the process wrote to stdout and stderr so far.
func (b *Broker) Log() string { return b.out.String() }

// Running reports whether the process has not ended yet.
func (b *Broker) Running() bool { return b.proc.Running() }

// Kill is `kill -9` of the broker, as an operator or the OOM killer would do it; it waits for the
// process to end. A process that has already ended is left as it is.
func (b *Broker) Kill() {
	if _, err := b.proc.Kill(ExitTimeout); err != nil {
		b.t.Errorf("kill oncemq: %v", err)
	}
}

// WaitKilled waits for the process to end by SIGKILL, the way an armed crash point ends it, and
// fails t if it ends otherwise or does not end.
func (b *Broker) WaitKilled(t testing.TB) {
	t.Helper()
	e, err := b.proc.Wait(ExitTimeout)
	if err != nil {
		t.Fatalf("oncemq should have died at the crash point: %v", err)
	}
	if !e.Killed() || e.Requested {
		t.Fatalf("oncemq should have died at the crash point by its own SIGKILL; it ended: %v (requested %t)", e, e.Requested)
	}
}

// Restart starts the same binary again on the same data directory (after Kill or a crash), with
// env and args instead of the old ones: a crash point is not armed again unless env says so.
func (b *Broker) Restart(t testing.TB, env []string, args ...string) *Broker {
	t.Helper()
	if b.Running() {
		t.Fatal("Restart: the previous oncemq is still running")
	}
	return StartBroker(t, b.bin, b.DataDir, env, args...)
}
