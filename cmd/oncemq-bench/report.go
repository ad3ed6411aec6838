package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// printResult writes one run's result for a person.
func printResult(w io.Writer, r *Result) {
	fmt.Fprintf(w, "%s: %d publisher(s) -> %d subscriber(s), QoS %d, %d B payload, window %d",
		r.Workload, r.Publishers, r.Subscribers, r.QoS, r.PayloadBytes, r.Window)
	if r.TargetRate > 0 {
		fmt.Fprintf(w, ", target %.0f msg/s", r.TargetRate)
	}
	fmt.Fprintln(w)
	if r.Error != "" {
		fmt.Fprintf(w, "  error       %s\n", r.Error)
	}
	fmt.Fprintf(w, "  published   %d in %.2fs = %.0f msg/s (%d failed)\n", r.Published, r.PublishSeconds, r.PublishRate, r.PublishErrors)
	fmt.Fprintf(w, "  delivered   %d of %d in %.2fs = %.0f msg/s\n", r.Distinct, r.Expected, r.DeliverSeconds, r.DeliverRate)
	fmt.Fprintf(w, "  latency     p50 %s  p90 %s  p99 %s  max %s\n",
		fmtMS(r.Latency.P50), fmtMS(r.Latency.P90), fmtMS(r.Latency.P99), fmtMS(r.Latency.Max))
	fmt.Fprintf(w, "  lost %d, duplicates %d", r.Lost, r.Duplicates)
	if r.Unexpected > 0 {
		fmt.Fprintf(w, ", deliveries of failed publishes %d", r.Unexpected)
	}
	if r.Invalid > 0 {
		fmt.Fprintf(w, ", deliveries not from this run %d", r.Invalid)
	}
	if r.DrainTimedOut {
		fmt.Fprint(w, " (drain timed out)")
	}
	fmt.Fprintln(w)
	if r.FirstError != "" {
		fmt.Fprintf(w, "  first error %s\n", r.FirstError)
	}
	if r.Stalled {
		fmt.Fprintln(w, "  broker STALLED: a publish was not acknowledged within the timeout; publishing stopped")
	}
}

// printConns writes one idle-connection result for a person.
func printConns(w io.Writer, r *ConnsResult) {
	fmt.Fprintf(w, "conns: %d of %d idle persistent connections in %.2fs = %.0f conn/s (%d failed)\n",
		r.Established, r.Target, r.Seconds, r.ConnsPerSecond, r.Failed)
	if r.RSSAfterKiB > 0 {
		fmt.Fprintf(w, "  broker RSS %s -> %s = %s per connection\n",
			fmtKiB(float64(r.RSSBeforeKiB)), fmtKiB(float64(r.RSSAfterKiB)), fmtBytes(r.BytesPerConn))
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "  first error %s\n", r.FirstError)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error %s\n", r.Error)
	}
}

// describeRun names a run in messages: workload, payload, broker.
func describeRun(r *Result) string {
	s := fmt.Sprintf("%s %s", r.Workload, fmtSize(r.PayloadBytes))
	if r.Broker != "" {
		s += " on " + r.Broker
	}
	return s
}

// printViolations says loudly which runs broke exactly-once or failed.
func printViolations(w io.Writer, runs []string, why [][]string) {
	bar := strings.Repeat("!", 72)
	fmt.Fprintln(w, bar)
	fmt.Fprintln(w, "!!! FAILED: exactly-once violated or publishes failed")
	for i, run := range runs {
		for _, v := range why[i] {
			fmt.Fprintf(w, "!!!   %s: %s\n", run, v)
		}
	}
	fmt.Fprintln(w, bar)
}

// printCompareTables writes the compare results as Markdown tables, with ratios against
// mosquitto: delivered msgs/s (higher is better) and p99 latency (lower is better).
func printCompareTables(w io.Writer, rep *compareReport) {
	if len(rep.Runs) > 0 {
		fmt.Fprintln(w, "| workload | payload | broker | publish msg/s | delivered msg/s | vs mosquitto | p50 ms | p90 ms | p99 ms | p99 vs mosquitto | max ms | lost | dup | notes |")
		fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
	}
	for _, r := range rep.Runs {
		if r.Missing != "" || r.Error != "" && r.Expected == 0 {
			note := "missing: " + r.Missing
			if r.Missing == "" {
				note = "error: " + r.Error
			}
			fmt.Fprintf(w, "| %s | %s | %s | - | - | - | - | - | - | - | - | - | - | %s |\n",
				r.Workload, fmtSize(r.PayloadBytes), r.Broker, mdEscape(note))
			continue
		}
		rateRatio, p99Ratio := "-", "-"
		if m := rep.find(r.Workload, r.PayloadBytes, "mosquitto"); m != nil && m.Missing == "" && m.Error == "" {
			rateRatio = fmtRatio(r.DeliverRate, m.DeliverRate)
			p99Ratio = fmtRatio(r.Latency.P99, m.Latency.P99)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n",
			r.Workload, fmtSize(r.PayloadBytes), r.Broker, r.PublishRate, r.DeliverRate, rateRatio,
			fmtNum(r.Latency.P50), fmtNum(r.Latency.P90), fmtNum(r.Latency.P99), p99Ratio, fmtNum(r.Latency.Max),
			r.Lost, r.Duplicates, mdEscape(runNotes(r)))
	}
	if len(rep.Conns) > 0 {
		if len(rep.Runs) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, "| broker | idle connections | conn/s | broker RSS before | RSS after | per connection | vs mosquitto | notes |")
		fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|---|")
	}
	var mosq *ConnsResult
	for _, c := range rep.Conns {
		if c.Broker == "mosquitto" && c.Missing == "" && c.Error == "" {
			mosq = c
		}
	}
	for _, c := range rep.Conns {
		if c.Missing != "" {
			fmt.Fprintf(w, "| %s | - | - | - | - | - | - | missing: %s |\n", c.Broker, mdEscape(c.Missing))
			continue
		}
		ratio := "-"
		if mosq != nil {
			ratio = fmtRatio(c.BytesPerConn, mosq.BytesPerConn)
		}
		var notes []string
		if c.Established < c.Target {
			notes = append(notes, fmt.Sprintf("only %d of %d", c.Established, c.Target))
		}
		if c.FirstError != "" {
			notes = append(notes, "first error: "+c.FirstError)
		}
		if c.Error != "" {
			notes = append(notes, "error: "+c.Error)
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %s | %s | %s | %s | %s |\n", c.Broker, c.Established, c.ConnsPerSecond,
			fmtKiB(float64(c.RSSBeforeKiB)), fmtKiB(float64(c.RSSAfterKiB)), fmtBytes(c.BytesPerConn), ratio,
			mdEscape(strings.Join(notes, "; ")))
	}
}

// runNotes flags what a reader of the table must not miss.
func runNotes(r *Result) string {
	var notes []string
	switch {
	case r.QoS == 2 && (r.Duplicates > 0 || r.Lost > 0 && !r.DrainTimedOut):
		notes = append(notes, "**EXACTLY-ONCE VIOLATED**")
	case r.QoS == 2 && r.Lost > 0:
		notes = append(notes, "**EXACTLY-ONCE NOT SHOWN** (undelivered at the drain timeout)")
	}
	if r.Stalled {
		notes = append(notes, "broker STALLED: a publish was not acknowledged within the timeout")
	}
	if r.DrainTimedOut {
		notes = append(notes, fmt.Sprintf("drain timed out (%d of %d delivered)", r.Distinct, r.Expected))
	}
	if r.PublishErrors > 0 {
		notes = append(notes, fmt.Sprintf("%d publishes failed: %s", r.PublishErrors, r.FirstError))
	} else if r.FirstError != "" {
		notes = append(notes, r.FirstError)
	}
	if r.Error != "" {
		notes = append(notes, "error: "+r.Error)
	}
	if r.TimeCapped {
		notes = append(notes, fmt.Sprintf("publishing stopped by --duration after %d messages", r.Published))
	}
	return strings.Join(notes, "; ")
}

// target is one of the product's goals, checked against a compare run.
type target struct {
	what  string
	check func(rep *compareReport) (ok bool, detail string, known bool)
}

// rateTarget: broker's delivered msgs/s on workload >= factor x other's, for every payload size.
func rateTarget(broker, other, wl string, factor float64) target {
	return target{
		what: fmt.Sprintf("%s %s delivered msg/s >= %gx %s", broker, wl, factor, other),
		check: func(rep *compareReport) (bool, string, bool) {
			ok, known := true, false
			var details []string
			for _, size := range rep.Sizes {
				a, b := rep.find(wl, size, broker), rep.find(wl, size, other)
				if !usable(a) || !usable(b) || b.DeliverRate == 0 {
					continue
				}
				known = true
				ratio := a.DeliverRate / b.DeliverRate
				ok = ok && ratio >= factor
				details = append(details, fmt.Sprintf("%s: %.2fx", fmtSize(size), ratio))
			}
			return ok, strings.Join(details, ", "), known
		},
	}
}

// p99Target: broker's p99 on workload <= other's, for every payload size.
func p99Target(broker, other, wl string) target {
	return target{
		what: fmt.Sprintf("%s %s p99 latency no worse than %s", broker, wl, other),
		check: func(rep *compareReport) (bool, string, bool) {
			ok, known := true, false
			var details []string
			for _, size := range rep.Sizes {
				a, b := rep.find(wl, size, broker), rep.find(wl, size, other)
				if !usable(a) || !usable(b) {
					continue
				}
				known = true
				ok = ok && a.Latency.P99 <= b.Latency.P99
				details = append(details, fmt.Sprintf("%s: %s vs %s ms", fmtSize(size), fmtNum(a.Latency.P99), fmtNum(b.Latency.P99)))
			}
			return ok, strings.Join(details, ", "), known
		},
	}
}

var targets = []target{
	rateTarget("oncemq-always", "mosquitto", "qos2-1to1", 1.5),
	p99Target("oncemq-always", "mosquitto", "qos2-1to1"),
	rateTarget("oncemq-none", "mosquitto", "qos2-1to1", 2),
	rateTarget("oncemq-always", "mochi-bolt", "qos2-1to1", 30),
	rateTarget("oncemq-always", "mosquitto", "qos1-window20", 0.5), // within 2x of mosquitto
	{
		what: "oncemq memory per idle persistent connection <= 6 KiB",
		check: func(rep *compareReport) (bool, string, bool) {
			ok, known := true, false
			var details []string
			for _, c := range rep.Conns {
				if strings.HasPrefix(c.Broker, "oncemq") && c.Missing == "" && c.BytesPerConn > 0 {
					known = true
					ok = ok && c.BytesPerConn <= 6*1024
					details = append(details, fmt.Sprintf("%s: %s", c.Broker, fmtBytes(c.BytesPerConn)))
				}
			}
			return ok, strings.Join(details, ", "), known
		},
	},
}

func usable(r *Result) bool { return r != nil && r.Missing == "" && r.Error == "" && r.DeliverRate > 0 }

// printTargets checks the product's targets against the results.
func printTargets(w io.Writer, rep *compareReport) {
	fmt.Fprintln(w, "Targets:")
	for _, t := range targets {
		ok, detail, known := t.check(rep)
		status := "met   "
		switch {
		case !known:
			status, detail = "n/a   ", "not measured in this run"
		case !ok:
			status = "MISSED"
		}
		fmt.Fprintf(w, "  %s  %s (%s)\n", status, t.what, detail)
	}
}

func fmtMS(ms float64) string { return fmtNum(ms) + " ms" }

// fmtNum prints a number with about three significant digits.
func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func fmtRatio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmtNum(a/b) + "x"
}

func fmtSize(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

func fmtKiB(kib float64) string {
	if kib == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", kib/1024)
}

func fmtBytes(b float64) string {
	if b == 0 {
		return "-"
	}
	if b >= 1024 || b <= -1024 {
		return fmt.Sprintf("%.1f KiB", b/1024)
	}
	return fmt.Sprintf("%.0f B", b)
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

// progress prints a line about a running test on stderr: in place on a terminal, every few
// seconds otherwise.
type progress struct {
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// startProgress starts printing label, the elapsed time, line()'s text and the rate of its
// count until stop; w nil prints nothing.
func startProgress(w io.Writer, label string, line func() (count int64, text string)) *progress {
	p := &progress{done: make(chan struct{})}
	if w == nil {
		return p
	}
	tty := isTerminal(w)
	every := 5 * time.Second
	if tty {
		every = 500 * time.Millisecond
	}
	start, last, lastCount := time.Now(), time.Now(), int64(0)
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				if tty {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case now := <-t.C:
				n, what := line()
				rate := float64(n-lastCount) / now.Sub(last).Seconds()
				last, lastCount = now, n
				text := fmt.Sprintf("%s %5.1fs: %s (%.0f/s)", label, now.Sub(start).Seconds(), what, rate)
				if tty {
					fmt.Fprint(w, "\r\033[K"+text)
				} else {
					fmt.Fprintln(w, text)
				}
			}
		}
	})
	return p
}

// stop ends the progress line; it may be called more than once.
func (p *progress) stop() {
	p.once.Do(func() { close(p.done) })
	p.wg.Wait()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
