// Package childproc runs a program as a child process the way oncemq's tools need one: a broker
// under test (torture, the binary's tests) or a peer broker (oncemq-bench). A Proc captures the
// child's output, waits for its TCP port to accept, stops it with SIGTERM, kills it with SIGKILL,
// pauses it with SIGSTOP, and reports how it ended and whether that end was asked for.
//
// The child's stdout and stderr always reach the parent through a pipe, even when they end up in a
// file: a limit set on the child (RLIMIT_FSIZE in a store-failure test) then bounds only the files
// the child writes itself. On Linux the child gets its own process group, so that a terminal's ^C
// reaches the parent only, which stops the child in order, and the kernel SIGKILLs it if the parent
// dies, so that no child outlives a crashed test or tool.
package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pipeGrace bounds how long Wait keeps copying output after the child exited, should a grandchild
// still hold the pipe.
const pipeGrace = 2 * time.Second

// Spec is a program to start.
type Spec struct {
	Path    string
	Args    []string  // after the program name
	Env     []string  // the whole environment; nil means this process's (see EnvironWithout)
	Dir     string    // working directory; "" means this process's
	Output  io.Writer // receives stdout and stderr; may be nil
	LogPath string    // if set, stdout and stderr are also appended to this file, created if needed
}

// Proc is a started child process. Its methods may be called from any goroutine.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has ended and its output is copied

	mu        sync.Mutex // guards the following
	requested bool       // Kill or Stop was called
	exit      Exit       // set before done is closed
}

// Exit is how a child process ended.
type Exit struct {
	Pid       int
	Code      int            // the exit status; -1 if a signal ended the process
	Signal    syscall.Signal // the signal that ended it; 0 if it exited
	Requested bool           // Kill or Stop had been called before it ended
	Err       error          // a failure to wait for it or to copy its output, else nil
}

// Killed reports whether SIGKILL ended the process.
func (e Exit) Killed() bool { return e.Signal == syscall.SIGKILL }

// Clean reports whether the process exited with status 0.
func (e Exit) Clean() bool { return e.Signal == 0 && e.Code == 0 && e.Err == nil }

// String says how the process ended, as os.ProcessState does: "exit status 1", "signal: killed".
func (e Exit) String() string {
	s := fmt.Sprintf("exit status %d", e.Code)
	if e.Signal != 0 {
		s = "signal: " + e.Signal.String()
	}
	if e.Err != nil {
		s += fmt.Sprintf(" (%v)", e.Err)
	}
	return s
}

// Start starts the program described by s.
func Start(s Spec) (*Proc, error) {
	out, closeLog, err := outputOf(s)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Env, cmd.Dir = s.Env, s.Dir
	if out != nil {
		// A writer that is not an *os.File makes exec copy through a pipe; the same value for both
		// streams makes it one pipe, written in the child's order.
		w := struct{ io.Writer }{out}
		cmd.Stdout, cmd.Stderr = w, w
	}
	cmd.WaitDelay = pipeGrace
	setAttrs(cmd)
	if err := cmd.Start(); err != nil {
		closeLog()
		return nil, fmt.Errorf("start %s: %w", s.Path, err)
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go p.wait(closeLog)
	return p, nil
}

// outputOf combines s.Output and s.LogPath into one writer (nil if neither is set) and returns
// the function that closes the log file.
func outputOf(s Spec) (io.Writer, func(), error) {
	if s.LogPath == "" {
		return s.Output, func() {}, nil
	}
	f, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open the log of %s: %w", s.Path, err)
	}
	closeLog := func() { f.Close() }
	if s.Output == nil {
		return f, closeLog, nil
	}
	return io.MultiWriter(f, s.Output), closeLog, nil
}

// wait reaps the process and records how it ended.
func (p *Proc) wait(closeLog func()) {
	err := p.cmd.Wait()
	closeLog()
	e := Exit{Pid: p.cmd.Process.Pid, Code: -1}
	if st := p.cmd.ProcessState; st != nil {
		e.Code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		e.Err = err
	}
	p.mu.Lock()
	e.Requested = p.requested
	p.exit = e
	p.mu.Unlock()
	close(p.done)
}

// Pid is the child's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has ended; Exit then says how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Running reports whether the process has not ended yet.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Exit is how the process ended; the zero Exit while it runs.
func (p *Proc) Exit() Exit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// Signal sends sig (SIGSTOP, SIGCONT...) without marking the end as requested; use Kill or Stop to
// end the process.
func (p *Proc) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %v to pid %d: %w", sig, p.Pid(), err)
	}
	return nil
}

// Wait waits up to timeout for the process to end and returns how it did.
func (p *Proc) Wait(timeout time.Duration) (Exit, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.Exit(), nil
	case <-t.C:
		return Exit{}, fmt.Errorf("pid %d still running after %v", p.Pid(), timeout)
	}
}

// Kill is kill -9: it sends SIGKILL (even to a stopped process) and waits up to timeout for the
// end. A process that has already ended is left as it is.
func (p *Proc) Kill(timeout time.Duration) (Exit, error) {
	p.markRequested()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return Exit{}, err
	}
	return p.Wait(timeout)
}

// Stop asks the process to shut down with SIGTERM and waits up to timeout; then it kills it and
// returns an error saying so. The Exit says whether the shutdown was clean.
func (p *Proc) Stop(timeout time.Duration) (Exit, error) {
	p.markRequested()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return Exit{}, err
	}
	_ = p.Signal(sigCont) // a stopped process cannot act on SIGTERM
	if e, err := p.Wait(timeout); err == nil {
		return e, nil
	}
	e, err := p.Kill(timeout)
	if err != nil {
		return e, err
	}
	return e, fmt.Errorf("pid %d did not exit within %v of SIGTERM and was killed", p.Pid(), timeout)
}

func (p *Proc) markRequested() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requested = true
}

// WaitAccepting dials addr until a TCP connection succeeds, for up to timeout. It fails at once if
// the process ends first, or when ctx ends.
func (p *Proc) WaitAccepting(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d does not accept connections on %s after %v: %w", p.Pid(), addr, timeout, err)
		}
		select {
		case <-p.done:
			return fmt.Errorf("pid %d ended (%v) before accepting connections on %s", p.Pid(), p.Exit(), addr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// EnvironWithout is this process's environment less the variables whose name starts with prefix:
// a child configured by its flags then does not pick up, say, a developer's ONCEMQ_* settings.
func EnvironWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// GoBuild runs `go build -o out [-tags tags] pkg` in dir ("" for the current folder), the one way
// the tests and the benchmark build the broker they start. Its error carries go build's output,
// cut to a readable length.
func GoBuild(ctx context.Context, dir, out, pkg string, tags ...string) error {
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 2000 {
			msg = msg[:2000] + "..."
		}
		return fmt.Errorf("go %s (in %q): %v: %s", strings.Join(args, " "), dir, err, msg)
	}
	return nil
}
