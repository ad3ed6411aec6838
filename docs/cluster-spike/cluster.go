package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// cluster is three node processes on loopback, started by the driver from its own binary.
type cluster struct {
	engine string
	peers  []nodeAddrs
	procs  []*exec.Cmd
	stdins []io.WriteCloser
	logs   []*os.File
}

// startCluster starts engine's three nodes with data under dir and waits until each is ready.
func startCluster(engine, dir string, size int) (*cluster, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &cluster{engine: engine}
	for range size {
		peer, err := freePort()
		if err != nil {
			return nil, err
		}
		client, err := freePort()
		if err != nil {
			return nil, err
		}
		c.peers = append(c.peers, nodeAddrs{Peer: peer, Client: client})
	}
	ready := make(chan error, size)
	for i := range size {
		nodeDir := filepath.Join(dir, fmt.Sprintf("%s-%d", engine, i))
		if err := os.MkdirAll(nodeDir, 0o700); err != nil {
			return nil, err
		}
		logFile, err := os.Create(nodeDir + ".log")
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(self, "node", "--engine", engine, "--id", fmt.Sprint(i),
			"--dir", nodeDir, "--peers", formatPeers(c.peers))
		cmd.Stderr = logFile
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			c.stop()
			return nil, fmt.Errorf("start %s node %d: %w", engine, i, err)
		}
		c.procs, c.stdins, c.logs = append(c.procs, cmd), append(c.stdins, stdin), append(c.logs, logFile)
		go waitReady(stdout, ready)
	}
	timeout := time.After(60 * time.Second)
	for i := range size {
		select {
		case err := <-ready:
			if err != nil {
				c.stop()
				return nil, fmt.Errorf("%s node: %w (logs in %s)", engine, err, dir)
			}
		case <-timeout:
			c.stop()
			return nil, fmt.Errorf("%s: only %d of %d nodes ready after 60s", engine, i, size)
		}
	}
	return c, nil
}

func waitReady(stdout io.Reader, ready chan<- error) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "ready" {
			ready <- nil
			_, _ = io.Copy(io.Discard, stdout)
			return
		}
	}
	ready <- fmt.Errorf("exited before it was ready")
}

// kill sends SIGKILL to node i and reaps it.
func (c *cluster) kill(i int) error {
	if err := c.procs[i].Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill node %d: %w", i, err)
	}
	_ = c.procs[i].Wait()
	c.procs[i] = nil
	return nil
}

// stop closes every live node's standard input, which ends it, and kills what is still running
// after 10 s.
func (c *cluster) stop() {
	for i, cmd := range c.procs {
		if cmd == nil {
			continue
		}
		c.stdins[i].Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	for _, f := range c.logs {
		f.Close()
	}
}

func (c *cluster) clientAddrs() []string {
	var out []string
	for _, p := range c.peers {
		out = append(out, p.Client)
	}
	return out
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
