package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ConnsResult is the outcome of the idle-connection test.
type ConnsResult struct {
	Broker         string  `json:"broker,omitempty"`
	Target         int     `json:"target"`
	Established    int     `json:"established"`
	Failed         int     `json:"failed"`
	FirstError     string  `json:"first_error,omitempty"`
	Seconds        float64 `json:"seconds"`
	ConnsPerSecond float64 `json:"conns_per_s"`
	RSSBeforeKiB   int64   `json:"rss_before_kib,omitempty"`
	RSSAfterKiB    int64   `json:"rss_after_kib,omitempty"`
	BytesPerConn   float64 `json:"bytes_per_conn,omitempty"` // (after - before) / established
	Error          string  `json:"error,omitempty"`
	Missing        string  `json:"missing,omitempty"`
}

// connsConfig is everything one idle-connection test needs.
type connsConfig struct {
	Addr          string
	N             int
	SessionExpiry uint32
	PID           int // broker process to read VmRSS of; 0: none
	// PerSource is how many connections come from each 127.0.0.x source address when the broker
	// is on IPv4 loopback; 0 means defaultConnsPerSource.
	PerSource int
	Progress  io.Writer
	Label     string
}

// defaultConnsPerSource keeps each 127.0.0.x source address within the ephemeral ports
// (32768-60999), so that 50,000 connections do not run out of them.
const defaultConnsPerSource = 20000

const (
	connsDialers = 32 // connections being set up at once
	// connsSettle is how long the connections sit idle before the broker's memory is read: the
	// steady state of idle devices, not the garbage of the connect burst. oncemq gives memory back
	// after 5 to 10 s of quiet; mosquitto and mochi do not change with the wait.
	connsSettle     = 12 * time.Second
	connackTimeout  = 10 * time.Second // per connection
	connsMaxFailure = 100              // give up after this many failed connections (or 1%)
)

// runConns opens N idle MQTT 5 connections with persistent sessions (Clean Start 0, Session
// Expiry), each with a raw CONNECT so that the client side costs one socket, holds them, reads
// the broker's resident memory before and after, and closes them.
func runConns(ctx context.Context, cfg connsConfig) (*ConnsResult, error) {
	res := &ConnsResult{Target: cfg.N}
	target, loopback4, err := resolveBroker(ctx, cfg.Addr)
	if err != nil {
		return res, err
	}
	var status *os.File // opened now: once the connections are up there may be no descriptor left
	if cfg.PID > 0 {
		if status, err = os.Open(fmt.Sprintf("/proc/%d/status", cfg.PID)); err != nil {
			return res, err
		}
		defer status.Close()
		if res.RSSBeforeKiB, err = readRSSFrom(status); err != nil {
			return res, err
		}
	}

	conns := make([]net.Conn, cfg.N)
	defer resetAll(conns)
	start := time.Now()
	res.Established, res.Failed, res.FirstError = dialIdle(ctx, cfg, target, loopback4, conns)
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.ConnsPerSecond = float64(res.Established) / res.Seconds
	}
	if cfg.PID > 0 {
		sleepUntil(ctx, time.Now().Add(connsSettle))
		if res.RSSAfterKiB, err = readRSSFrom(status); err != nil {
			return res, err
		}
		if res.Established > 0 {
			res.BytesPerConn = float64(res.RSSAfterKiB-res.RSSBeforeKiB) * 1024 / float64(res.Established)
		}
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// resolveBroker turns addr into an IP address and port, and says whether it is on IPv4
// loopback (where the connections can come from many source addresses).
func resolveBroker(ctx context.Context, addr string) (target string, loopback4 bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, err
	}
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return "", false, fmt.Errorf("resolve %s: %v", host, err)
		}
		ip = ips[0]
	}
	return net.JoinHostPort(ip.String(), port), ip.To4() != nil && ip.To4()[0] == 127, nil
}

// resetAll closes the connections with a reset rather than a close: a closed socket would sit in
// TIME_WAIT on this side for a minute, and a compare run opening 10,000 connections per broker
// would run out of ports by the fourth broker.
func resetAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			_ = c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}
}

// dialIdle opens the idle connections into conns, connsDialers at a time, until all are open,
// too many failed, or ctx ends. It returns how many were established and failed, and the first
// error.
func dialIdle(ctx context.Context, cfg connsConfig, target string, loopback4 bool, conns []net.Conn) (established, failed int, firstErr string) {
	perSource := cfg.PerSource
	if perSource <= 0 {
		perSource = defaultConnsPerSource
	}
	runID := randomHex(4)
	var next, nEstablished, nFailed atomic.Int64
	var first atomic.Value
	maxFailed := int64(max(connsMaxFailure, cfg.N/100))
	prog := startProgress(cfg.Progress, cfg.Label, func() (int64, string) {
		n := nEstablished.Load()
		return n, fmt.Sprintf("connected %d of %d (%d failed)", n, cfg.N, nFailed.Load())
	})
	defer prog.stop()
	var wg sync.WaitGroup
	for range connsDialers {
		wg.Go(func() {
			for ctx.Err() == nil && nFailed.Load() < maxFailed {
				i := int(next.Add(1) - 1)
				if i >= cfg.N {
					return
				}
				d := net.Dialer{Timeout: connackTimeout}
				if loopback4 && i >= perSource {
					// More source addresses, so that 50,000 connections do not run out of ports.
					// (The first block binds nothing: connect's own port choice is less picky.)
					d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+i/perSource))}
				}
				c, err := openIdle(ctx, d, target, fmt.Sprintf("idle-%s-%d", runID, i), cfg.SessionExpiry)
				if err != nil {
					nFailed.Add(1)
					first.CompareAndSwap(nil, err.Error())
					if errors.Is(err, syscall.EMFILE) {
						nFailed.Store(maxFailed) // out of file descriptors: no use trying on
					}
					continue
				}
				conns[i] = c
				nEstablished.Add(1)
			}
		})
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		firstErr = e.(string)
	}
	return int(nEstablished.Load()), int(nFailed.Load()), firstErr
}

// openIdle connects, sends CONNECT and waits for a successful CONNACK.
func openIdle(ctx context.Context, d net.Dialer, addr, clientID string, expiry uint32) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(connackTimeout))
	if _, err := c.Write(connectPacket(clientID, expiry)); err != nil {
		c.Close()
		return nil, err
	}
	reason, err := readConnack(bufio.NewReaderSize(c, 64))
	if err == nil && reason >= 0x80 {
		err = fmt.Errorf("CONNACK reason code 0x%02x", reason)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// connectPacket is a minimal MQTT 5 CONNECT: Clean Start 0, Keep Alive 0 (idle for ever),
// Session Expiry Interval expiry, no will, no credentials.
func connectPacket(clientID string, expiry uint32) []byte {
	body := []byte{0, 4, 'M', 'Q', 'T', 'T', 5, 0x00, 0, 0} // protocol name, level 5, flags, keep alive
	body = append(body, 5, 0x11, byte(expiry>>24), byte(expiry>>16), byte(expiry>>8), byte(expiry))
	body = append(body, byte(len(clientID)>>8), byte(len(clientID)))
	body = append(body, clientID...)
	pkt := appendVarint([]byte{0x10}, len(body))
	return append(pkt, body...)
}

// appendVarint appends an MQTT Variable Byte Integer.
func appendVarint(b []byte, n int) []byte {
	for {
		digit := byte(n % 128)
		n /= 128
		if n > 0 {
			digit |= 0x80
		}
		b = append(b, digit)
		if n == 0 {
			return b
		}
	}
}

// readConnack reads one packet, which must be a CONNACK, and returns its reason code.
func readConnack(r *bufio.Reader) (byte, error) {
	typ, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	if typ != 0x20 {
		return 0, fmt.Errorf("got packet type 0x%02x, want CONNACK", typ)
	}
	var length, shift int
	for i := 0; ; i++ {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		length |= int(b&0x7f) << shift
		shift += 7
		if b&0x80 == 0 {
			break
		}
		if i == 3 {
			return 0, errors.New("CONNACK: malformed remaining length")
		}
	}
	if length < 2 {
		return 0, fmt.Errorf("CONNACK: remaining length %d", length)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	return body[1], nil // body[0] is the acknowledge flags
}

// raiseFileLimit raises this process's RLIMIT_NOFILE to at least want (root may raise the hard
// limit too). Because it calls Setrlimit itself, the Go runtime passes the raised limit on to the
// child processes (the brokers) instead of restoring the original one.
func raiseFileLimit(want uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	newLim := lim
	newLim.Cur = max(lim.Cur, want)
	newLim.Max = max(lim.Max, newLim.Cur)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &newLim); err != nil {
		// Not allowed to raise the hard limit: take what there is.
		newLim = syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
		if err2 := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &newLim); err2 != nil {
			return err2
		}
		if want > lim.Max {
			return fmt.Errorf("open files limited to %d (wanted %d): %v", lim.Max, want, err)
		}
	}
	return nil
}

// cmdConns is `oncemq-bench conns`.
func cmdConns(ctx context.Context, con console, args []string) (int, error) {
	f, err := parseConnsFlags(args, con.out)
	if err != nil {
		return 2, err
	}
	out, err := outputDir(f.Out, "conns")
	if err != nil {
		return 1, err
	}
	if err := raiseFileLimit(uint64(f.N) + 1024); err != nil {
		fmt.Fprintf(con.err, "oncemq-bench conns: warning: %v\n", err)
	}
	cfg := connsConfig{Addr: f.Addr, N: f.N, SessionExpiry: f.SessionExpiry, PID: f.PID, Label: "conns"}
	if !f.Quiet {
		cfg.Progress = con.err
	}
	res, err := runConns(ctx, cfg)
	if err != nil {
		res.Error = err.Error()
	}
	printConns(con.out, res)
	if err := saveResult(con, out, "conns.json", res); err != nil {
		return 1, err
	}
	if res.Error != "" || res.Established < res.Target {
		return 1, nil
	}
	return 0, nil
}
