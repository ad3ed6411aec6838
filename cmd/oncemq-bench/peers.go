package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/oncemq/oncemq/cmd/internal/childproc"
)

// errMissing marks a broker that is not installed (or could not be built): compare reports it as
// a "missing" row rather than skipping it silently.
var errMissing = errors.New("missing")

// peerEnv is what compare needs to start the brokers.
type peerEnv struct {
	tmp       string // root of the run's temp dirs
	oncemq    string // oncemq binary
	oncemqErr error  // why there is no oncemq binary
	mosquitto string
	self      string // this binary, for mochi-peer
}

// peer is one broker running as a child process on a fresh data directory and port.
type peer struct {
	name    string
	addr    string
	dir     string
	logPath string
	proc    *childproc.Proc
}

// startPeer starts the named broker and waits until it accepts connections.
func startPeer(ctx context.Context, env *peerEnv, name string) (*peer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(env.tmp, name+"-")
	if err != nil {
		return nil, err
	}
	p := &peer{name: name, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir,
		logPath: filepath.Join(dir, "broker.log")}

	var bin string
	var args []string
	switch name {
	case "oncemq-always", "oncemq-none":
		if env.oncemqErr != nil {
			return nil, fmt.Errorf("%w: %v", errMissing, env.oncemqErr)
		}
		bin = env.oncemq
		args = []string{"serve", "--listen", p.addr, "--data", filepath.Join(dir, "data"),
			"--sync", strings.TrimPrefix(name, "oncemq-"), "--log-level", "warn"}
	case "mosquitto":
		bin, err = findMosquitto(env.mosquitto)
		if err != nil {
			return nil, err
		}
		conf := filepath.Join(dir, "mosquitto.conf")
		if err := os.WriteFile(conf, []byte(mosquittoConfig(port, dir)), 0o644); err != nil {
			return nil, err
		}
		args = []string{"-c", conf}
	case "mochi":
		bin, args = env.self, []string{"mochi-peer", "--listen", p.addr}
	case "mochi-bolt":
		bin, args = env.self, []string{"mochi-peer", "--listen", p.addr, "--bolt", filepath.Join(dir, "mochi.bolt")}
	default:
		return nil, fmt.Errorf("unknown broker %q", name)
	}

	// childproc gives it its own process group, so that ^C reaches the bench, which stops the
	// broker in order, and has it killed if the bench dies.
	p.proc, err = childproc.Start(childproc.Spec{Path: bin, Args: args, Dir: dir, LogPath: p.logPath})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if err := p.waitReady(ctx, 20*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// mosquittoConfig is the generated configuration: persistence on, no queue or in-flight limits
// (mosquitto's default max_queued_messages of 1000 drops messages it has acknowledged).
func mosquittoConfig(port int, dir string) string {
	return fmt.Sprintf(`listener %d 127.0.0.1
allow_anonymous true
persistence true
persistence_location %s/
max_queued_messages 0
max_inflight_messages 0
log_dest stderr
log_type error
log_type warning
`, port, dir)
}

func findMosquitto(path string) (string, error) {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return path, nil
	}
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: no mosquitto at %s or on PATH (apt-get install mosquitto)", errMissing, path)
}

// waitReady polls the broker's port until it accepts a connection.
func (p *peer) waitReady(ctx context.Context, timeout time.Duration) error {
	if err := p.proc.WaitAccepting(ctx, p.addr, timeout); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s did not start: %w; log: %s", p.name, err, p.logTail())
	}
	return nil
}

// pid is the broker's process id, for reading its memory.
func (p *peer) pid() int { return p.proc.Pid() }

// stop sends SIGTERM, waits up to 10 s, then kills. It returns what the broker logged if it had
// to be killed.
func (p *peer) stop() error {
	if _, err := p.proc.Stop(10 * time.Second); err != nil {
		return fmt.Errorf("%s: %w; log: %s", p.name, err, p.logTail())
	}
	return nil
}

// logTail is the end of the broker's log, for error messages.
func (p *peer) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(no log)"
	}
	b = bytes.TrimSpace(b)
	if len(b) > 600 {
		b = append([]byte("..."), b[len(b)-600:]...)
	}
	if len(b) == 0 {
		return "(empty)"
	}
	return string(b)
}

// freePort asks the kernel for a free port on 127.0.0.1. The port is free when this returns;
// the broker binds it a moment later.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// readRSSFrom reads VmRSS (KiB) from an open /proc/PID/status, from its start; the file can be
// read again, so that it is opened before the test takes every file descriptor there is.
func readRSSFrom(f *os.File) (int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest) // "1234 kB"
			if len(fields) >= 1 {
				return strconv.ParseInt(fields[0], 10, 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no VmRSS in %s", f.Name())
}

// findRepo walks up from the working directory to the oncemq module root.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/oncemq/oncemq\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the oncemq repository; give --repo or --oncemq")
		}
		dir = parent
	}
}

// buildOncemq builds ./cmd/oncemq of repo into out.
func buildOncemq(ctx context.Context, repo, out string) error {
	return childproc.GoBuild(ctx, repo, out, "./cmd/oncemq")
}
