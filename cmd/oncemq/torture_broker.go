package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	brokerAcceptWait = 30 * time.Second // from exec to accepting TCP (recovery included)
	brokerExitWait   = 20 * time.Second // from a signal to the exit status
)

// childBroker is the oncemq broker under test: a child process on a fixed loopback port and data
// directory, killed and restarted on them. Its stdout and stderr go to one log file, each run headed
// by a line naming it.
type childBroker struct {
	bin     string
	args    []string
	addr    string
	logPath string
	log     *os.File

	mu       sync.Mutex // guards the following
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has exited
	stopping bool          // we are ending cmd: SIGKILL, or SIGTERM for the final stop
	runs     int
	status   string // how the last run ended

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

func newChildBroker(bin, addr, dataDir, sync, logLevel string, maxQueued int, logPath string) (*childBroker, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &childBroker{
		bin:     bin,
		args:    []string{"serve", "--listen", addr, "--data", dataDir, "--sync", sync, "--log-level", logLevel, "--max-queued", fmt.Sprint(maxQueued)},
		addr:    addr,
		logPath: logPath,
		log:     f,
		died:    make(chan string, 1),
	}, nil
}

// brokerEnviron is this process's environment without ONCEMQ_* variables, so that a developer's
// settings (or a test crash point) do not leak into the broker under test: its flags say it all.
func brokerEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ONCEMQ_") {
			env = append(env, kv)
		}
	}
	return env
}

// start runs the broker and waits until it accepts TCP connections, which it does once recovery is
// done.
func (b *childBroker) start(ctx context.Context) error {
	b.mu.Lock()
	b.runs++
	run := b.runs
	fmt.Fprintf(b.log, "==== torture: broker run %d at %s: %s %s\n", run, time.Now().Format(time.RFC3339Nano), b.bin, strings.Join(b.args, " "))
	cmd := exec.Command(b.bin, b.args...)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	cmd.Env = brokerEnviron()
	setChildAttrs(cmd)
	if err := cmd.Start(); err != nil {
		b.mu.Unlock()
		return fmt.Errorf("start %s: %w", b.bin, err)
	}
	exited := make(chan struct{})
	b.cmd, b.exited, b.stopping = cmd, exited, false
	b.mu.Unlock()

	go func() {
		err := cmd.Wait()
		b.mu.Lock()
		ours := b.stopping && endedAsAsked(cmd.ProcessState)
		how := fmt.Sprintf("run %d (pid %d) ended: %v", run, cmd.Process.Pid, describeExit(cmd.ProcessState, err))
		b.status = how
		b.mu.Unlock()
		if !ours {
			fmt.Fprintf(b.log, "==== torture: %s, not killed by the torture\n", how)
			select {
			case b.died <- how:
			default:
			}
		}
		close(exited)
	}()
	return waitAccepting(ctx, b.addr, exited, brokerAcceptWait)
}

// endedAsAsked: SIGKILL (our kill) or a clean exit after SIGTERM (our stop).
func endedAsAsked(st *os.ProcessState) bool {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return true
	}
	return st.Exited() && st.ExitCode() == 0
}

func describeExit(st *os.ProcessState, err error) string {
	if st == nil {
		return err.Error()
	}
	return st.String()
}

// waitAccepting dials addr until a connection succeeds.
func waitAccepting(ctx context.Context, addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the broker does not accept connections on %s after %v: %v", addr, timeout, err)
		}
		select {
		case <-exited:
			return errors.New("the broker exited before accepting connections")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL and waits for the process to end.
func (b *childBroker) kill() error {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.stopping = true
	b.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
		return nil
	case <-time.After(brokerExitWait):
		return fmt.Errorf("pid %d still running %v after SIGKILL", cmd.Process.Pid, brokerExitWait)
	}
}

// stop asks the broker to shut down (SIGTERM) and waits; it kills it if it takes too long. The
// result describes a shutdown that was not clean, "" otherwise.
func (b *childBroker) stop() string {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.stopping = true
	b.mu.Unlock()
	if cmd == nil {
		return ""
	}
	select {
	case <-exited:
		return "" // already gone, and reported if unexpectedly
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(brokerExitWait):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return fmt.Sprintf("did not exit within %v of SIGTERM; killed", brokerExitWait)
	}
	if st := cmd.ProcessState; !st.Exited() || st.ExitCode() != 0 {
		return "shutdown after SIGTERM: " + st.String()
	}
	return ""
}

// close releases the log file.
func (b *childBroker) close() { b.log.Close() }

// tail returns the last n lines of the broker's log.
func (b *childBroker) tail(n int) string {
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
