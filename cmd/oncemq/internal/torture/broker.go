package torture

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncemq/oncemq/cmd/internal/childproc"
)

const (
	brokerAcceptWait = 30 * time.Second // from exec to accepting TCP (recovery included)
	brokerExitWait   = 20 * time.Second // from a signal to the exit status
)

// brokerChild is the oncemq broker under test: a child process on a fixed loopback port and data
// directory, killed and restarted on them. Its stdout and stderr go to one log file, each run headed
// by a line naming it.
type brokerChild struct {
	bin     string
	args    []string
	addr    string
	logPath string
	log     *os.File

	mu   sync.Mutex // guards the following
	proc *childproc.Proc
	runs int

	died chan string // the first run that ended without being asked to: how
}

// freeLoopbackPort finds a port that is free now on 127.0.0.1 and that the kernel does not hand
// out by itself: the broker is restarted on it after each kill, and in the meantime an outgoing
// connection or a port-0 listener of another process must not take it. It falls back to a port
// picked by the kernel.
func freeLoopbackPort() (int, error) {
	low := ephemeralPortsStart()
	if low > 11024 {
		for range 50 {
			port := 10000 + rand.IntN(low-11024)
			if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				ln.Close()
				return port, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralPortsStart is the first port of the kernel's ephemeral range (Linux; 32768 elsewhere,
// the lowest common default).
func ephemeralPortsStart() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	return low
}

func newBrokerChild(bin, addr, dataDir, sync, logLevel string, maxQueued int, dedupOff bool, logPath string) (*brokerChild, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--listen", addr, "--data", dataDir, "--sync", sync, "--log-level", logLevel, "--max-queued", fmt.Sprint(maxQueued)}
	if dedupOff {
		args = append(args, "--dedup-max", "0")
	}
	return &brokerChild{
		bin:     bin,
		args:    args,
		addr:    addr,
		logPath: logPath,
		log:     f,
		died:    make(chan string, 1),
	}, nil
}

// start runs the broker and waits until it accepts TCP connections, which it does once recovery is
// done. The broker gets this process's environment less the ONCEMQ_* variables, so that a
// developer's settings (or a test's crash point) do not leak into it: its flags say it all.
func (b *brokerChild) start(ctx context.Context) error {
	b.mu.Lock()
	b.runs++
	run := b.runs
	fmt.Fprintf(b.log, "==== torture: broker run %d at %s: %s %s\n", run, time.Now().Format(time.RFC3339Nano), b.bin, strings.Join(b.args, " "))
	proc, err := childproc.Start(childproc.Spec{Path: b.bin, Args: b.args, Env: childproc.EnvironWithout("ONCEMQ_"), Output: b.log})
	if err != nil {
		b.mu.Unlock()
		return err
	}
	b.proc = proc
	b.mu.Unlock()
	go b.watch(proc, run)
	return proc.WaitAccepting(ctx, b.addr, brokerAcceptWait)
}

// watch waits for run number run to end and reports it on b.died unless the torture ended it: by
// SIGKILL (a kill) or with a clean exit after SIGTERM (the final stop).
func (b *brokerChild) watch(proc *childproc.Proc, run int) {
	<-proc.Done()
	e := proc.Exit()
	if e.Requested && (e.Killed() || e.Clean()) {
		return
	}
	how := fmt.Sprintf("run %d (pid %d) ended: %v", run, e.Pid, e)
	fmt.Fprintf(b.log, "==== torture: %s, not killed by the torture\n", how)
	select {
	case b.died <- how:
	default:
	}
}

func (b *brokerChild) current() *childproc.Proc {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc
}

// kill sends SIGKILL and waits for the process to end.
func (b *brokerChild) kill() error {
	proc := b.current()
	if proc == nil {
		return nil
	}
	_, err := proc.Kill(brokerExitWait)
	return err
}

// stop asks the broker to shut down (SIGTERM) and waits; it kills it if it takes too long. The
// result describes a shutdown that was not clean, "" otherwise.
func (b *brokerChild) stop() string {
	proc := b.current()
	if proc == nil || !proc.Running() {
		return "" // already gone, and reported if unexpectedly
	}
	e, err := proc.Stop(brokerExitWait)
	switch {
	case err != nil && e.Killed():
		return fmt.Sprintf("did not exit within %v of SIGTERM; killed", brokerExitWait)
	case err != nil:
		return err.Error()
	case !e.Clean():
		return "shutdown after SIGTERM: " + e.String()
	}
	return ""
}

// close releases the log file.
func (b *brokerChild) close() { b.log.Close() }

// tail returns the last n lines of the broker's log.
func (b *brokerChild) tail(n int) string {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
