package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// comparison is a compare run under way: its flags, where the brokers start from, which brokers
// turned out not to be installed, and how far it has got.
type comparison struct {
	f        compareFlags
	con      console
	progress io.Writer // the live progress line of a measurement: on a terminal only, else nil
	env      *peerEnv
	missing  map[string]string // broker -> why, once known not installed
	start    time.Time
	phase    int // measurements done
	phases   int // measurements in all
}

// runAll makes every measurement in order and adds the results to rep; it stops early when ctx
// ends.
func (c *comparison) runAll(ctx context.Context, rep *compareReport) {
	for _, wname := range c.f.Workloads {
		if wname == connsWorkload {
			for _, b := range c.f.Brokers {
				if ctx.Err() != nil {
					return
				}
				res := measure(ctx, c, b, "conns", &ConnsResult{Target: c.f.Conns}, func(p *peer, label string) (*ConnsResult, error) {
					return runConns(ctx, connsConfig{Addr: p.addr, N: c.f.Conns, SessionExpiry: c.f.Load.SessionExpiry,
						PID: p.pid(), Label: label, Progress: c.progress})
				})
				rep.Conns = append(rep.Conns, res)
			}
			continue
		}
		wl, _ := findWorkload(wname)
		for _, size := range c.f.Sizes {
			load := wl.params(c.f.Load)
			load.Size = size
			for _, b := range c.f.Brokers {
				if ctx.Err() != nil {
					return
				}
				empty := &Result{Workload: wl.Name, QoS: int(wl.QoS), Publishers: wl.Pubs, Subscribers: wl.Subs, PayloadBytes: size, Window: load.Window}
				res := measure(ctx, c, b, wl.Name+" "+fmtSize(size), empty, func(p *peer, label string) (*Result, error) {
					return runWorkload(ctx, runConfig{Addr: p.addr, Workload: wl, Load: load, Label: label, Progress: c.progress})
				})
				rep.Runs = append(rep.Runs, res)
			}
		}
	}
}

// measurement is a result compare collects: a message run's (*Result) or an idle-connection
// test's (*ConnsResult).
type measurement interface {
	// setOutcome records the broker, why it was not measured (not installed), and why the
	// measurement could not be done.
	setOutcome(broker, missing string, err error)
	// summary is the phase line's account of the result.
	summary() string
}

// measure is one phase of compare: it starts broker b, runs fn against it, stops it, and prints
// the phase line. A broker that is not installed is remembered and not tried again; its result is
// empty, marked missing.
func measure[M measurement](ctx context.Context, c *comparison, b, what string, empty M, fn func(p *peer, label string) (M, error)) M {
	label := what + " " + b
	res := empty
	var runErr error
	why, err := c.withPeer(ctx, b, func(p *peer) { res, runErr = fn(p, label) })
	if err == nil {
		err = runErr
	}
	res.setOutcome(b, why, err)
	c.phase++
	if why != "" {
		c.phaseLine(label, "missing: "+why)
	} else {
		c.phaseLine(label, res.summary())
	}
	return res
}

func (r *Result) setOutcome(broker, missing string, err error) {
	r.Broker, r.Missing = broker, missing
	if err != nil {
		r.Error = err.Error()
	}
}

func (r *Result) summary() string {
	return strings.TrimSpace(fmt.Sprintf("delivered %.0f msg/s, p99 %s, lost %d, dup %d %s",
		r.DeliverRate, fmtMS(r.Latency.P99), r.Lost, r.Duplicates, runNotes(r)))
}

func (r *ConnsResult) setOutcome(broker, missing string, err error) {
	r.Broker, r.Missing = broker, missing
	if err != nil {
		r.Error = err.Error()
	}
}

func (r *ConnsResult) summary() string {
	return strings.TrimSpace(fmt.Sprintf("%d connections, %s per connection %s", r.Established, fmtBytes(r.BytesPerConn), r.Error))
}

// withPeer starts broker b, runs fn against it and stops it. For a broker that is not installed
// it returns why, and does not try it again.
func (c *comparison) withPeer(ctx context.Context, b string, fn func(p *peer)) (missingWhy string, err error) {
	if why, ok := c.missing[b]; ok {
		return why, nil
	}
	p, err := startPeer(ctx, c.env, b)
	if errors.Is(err, errMissing) {
		c.missing[b] = strings.TrimPrefix(err.Error(), errMissing.Error()+": ")
		return c.missing[b], nil
	}
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(p.dir)
	fn(p)
	if err := p.stop(); err != nil {
		fmt.Fprintf(c.con.err, "oncemq-bench compare: %s: %v\n", b, err)
	}
	return "", nil
}

// phaseLine prints the line of a finished measurement: its number, the time since compare
// started, what was measured and the result.
func (c *comparison) phaseLine(label, result string) {
	if c.f.Quiet {
		return
	}
	width := len(fmt.Sprint(c.phases))
	fmt.Fprintf(c.con.err, "[%*d/%d %s] %s: %s\n", width, c.phase, c.phases, fmtElapsed(time.Since(c.start)), label, result)
}

// note prints a line about the run that is not a measurement.
func (c *comparison) note(format string, args ...any) {
	if !c.f.Quiet {
		fmt.Fprintf(c.con.err, "oncemq-bench compare: "+format+"\n", args...)
	}
}

// fmtElapsed writes a duration as minutes and seconds, like 12m05s.
func fmtElapsed(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}
