package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// compareReport is everything compare measured, as printed and as written by --json.
type compareReport struct {
	Started   time.Time      `json:"started"`
	Command   string         `json:"command"`
	Machine   machineInfo    `json:"machine"`
	Brokers   []string       `json:"brokers"`
	Workloads []string       `json:"workloads"`
	Sizes     []int          `json:"payload_sizes"`
	Load      loadParams     `json:"load"`
	Runs      []*Result      `json:"runs"`
	Conns     []*ConnsResult `json:"conns"`
}

// find returns the result of a message workload on a broker, or nil.
func (rep *compareReport) find(wl string, size int, broker string) *Result {
	for _, r := range rep.Runs {
		if r.Workload == wl && r.PayloadBytes == size && r.Broker == broker {
			return r
		}
	}
	return nil
}

// machineInfo describes where the numbers were taken.
type machineInfo struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  string `json:"mem_total"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	Mosquitto string `json:"mosquitto,omitempty"`
}

func describeMachine(mosquitto string) machineInfo {
	m := machineInfo{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if bin, err := findMosquitto(mosquitto); err == nil {
		out, _ := exec.Command(bin, "-h").CombinedOutput() // exits non-zero after printing its version
		m.Mosquitto, _, _ = strings.Cut(string(out), "\n")
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cmdCompare is `oncemq-bench compare`: every workload (and payload size) against every broker,
// one broker at a time, each started fresh on a new data directory and port.
func cmdCompare(ctx context.Context, args []string) (int, error) {
	f, err := parseCompareFlags(args)
	if err != nil {
		return 2, err
	}
	if err := raiseFileLimit(uint64(f.Conns) + 4096); err != nil {
		fmt.Fprintf(stderr, "oncemq-bench compare: warning: %v\n", err)
	}
	tmp, err := os.MkdirTemp(f.TmpDir, "oncemq-bench-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)

	env := &peerEnv{tmp: tmp, mosquitto: f.Mosquitto}
	if env.self, err = os.Executable(); err != nil {
		return 1, err
	}
	if slices.ContainsFunc(f.Brokers, func(b string) bool { return strings.HasPrefix(b, "oncemq") }) {
		env.oncemq, env.oncemqErr = prepareOncemq(ctx, f, tmp)
		if env.oncemqErr != nil {
			fmt.Fprintf(stderr, "oncemq-bench compare: oncemq: %v\n", env.oncemqErr)
		}
	}

	rep := &compareReport{
		Started:   time.Now().UTC(),
		Command:   "oncemq-bench " + strings.Join(append([]string{"compare"}, args...), " "),
		Machine:   describeMachine(f.Mosquitto),
		Brokers:   f.Brokers,
		Workloads: f.Workloads,
		Sizes:     f.Sizes,
		Load:      f.Load,
	}
	missing := map[string]string{} // broker -> why, once known not installed

	for _, wname := range f.Workloads {
		if wname == connsWorkload {
			for _, b := range f.Brokers {
				if ctx.Err() != nil {
					break
				}
				rep.Conns = append(rep.Conns, compareConns(ctx, f, env, b, missing))
			}
			continue
		}
		wl, _ := findWorkload(wname)
		for _, size := range f.Sizes {
			for _, b := range f.Brokers {
				if ctx.Err() != nil {
					break
				}
				rep.Runs = append(rep.Runs, compareRun(ctx, f, env, b, wl, size, missing))
			}
		}
	}

	printCompareTables(stdout, rep)
	fmt.Fprintln(stdout)
	printTargets(stdout, rep)

	code := 0
	var bad []string
	var why [][]string
	for _, r := range rep.Runs {
		oncemq := strings.HasPrefix(r.Broker, "oncemq")
		if v := r.violations(); len(v) > 0 && r.Missing == "" {
			bad, why = append(bad, describeRun(r)), append(why, v)
			if oncemq {
				code = 1
			}
		}
		if oncemq && r.Missing != "" {
			code = 1 // the broker under test did not run
		}
	}
	for _, c := range rep.Conns {
		if strings.HasPrefix(c.Broker, "oncemq") && (c.Missing != "" || c.Error != "") {
			code = 1
		}
	}
	if len(bad) > 0 {
		printViolations(stderr, bad, why)
	}
	if f.JSON != "" {
		if err := writeJSON(f.JSON, rep); err != nil {
			return 1, err
		}
	}
	if f.Plot != "" {
		if err := writePlot(f.Plot, rep); err != nil {
			return 1, err
		}
	}
	if ctx.Err() != nil {
		return 1, ctx.Err()
	}
	return code, nil
}

// prepareOncemq returns the oncemq binary: --oncemq, or built from the repository.
func prepareOncemq(ctx context.Context, f compareFlags, tmp string) (string, error) {
	if f.Oncemq != "" {
		if _, err := os.Stat(f.Oncemq); err != nil {
			return "", err
		}
		return f.Oncemq, nil
	}
	repo := f.Repo
	if repo == "" {
		var err error
		if repo, err = findRepo(); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(tmp, "oncemq")
	if !f.Quiet {
		fmt.Fprintf(stderr, "building oncemq from %s\n", repo)
	}
	return bin, buildOncemq(ctx, repo, bin)
}

// withPeer starts broker b, runs fn against it and stops it. A broker that is not installed
// is remembered in missing and not tried again.
func withPeer(ctx context.Context, f compareFlags, env *peerEnv, b string, missing map[string]string, fn func(p *peer)) (missingWhy string, err error) {
	if why, ok := missing[b]; ok {
		return why, nil
	}
	p, err := startPeer(ctx, env, b)
	if errors.Is(err, errMissing) {
		missing[b] = strings.TrimPrefix(err.Error(), errMissing.Error()+": ")
		fmt.Fprintf(stderr, "%s: missing: %s\n", b, missing[b])
		return missing[b], nil
	}
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(p.dir)
	fn(p)
	if err := p.stop(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", b, err)
	}
	return "", nil
}

func compareRun(ctx context.Context, f compareFlags, env *peerEnv, b string, wl workload, size int, missing map[string]string) *Result {
	load := f.Load
	load.Size = size
	res := &Result{Workload: wl.Name, QoS: int(wl.QoS), Publishers: wl.Pubs, Subscribers: wl.Subs, PayloadBytes: size, Window: load.Window}
	label := fmt.Sprintf("%s %s %s", wl.Name, fmtSize(size), b)
	why, err := withPeer(ctx, f, env, b, missing, func(p *peer) {
		cfg := runConfig{Addr: p.addr, Workload: wl, Load: load, Label: label}
		if !f.Quiet {
			cfg.Progress = stderr
		}
		r, err := runWorkload(ctx, cfg)
		if err != nil {
			r.Error = err.Error()
		}
		res = r
	})
	res.Broker, res.Missing = b, why
	if err != nil {
		res.Error = err.Error()
	}
	if !f.Quiet && why == "" {
		fmt.Fprintf(stderr, "%s: delivered %.0f msg/s, p99 %s, lost %d, dup %d %s\n", label, res.DeliverRate,
			fmtMS(res.Latency.P99), res.Lost, res.Duplicates, runNotes(res))
	}
	return res
}

func compareConns(ctx context.Context, f compareFlags, env *peerEnv, b string, missing map[string]string) *ConnsResult {
	res := &ConnsResult{Target: f.Conns}
	label := "conns " + b
	why, err := withPeer(ctx, f, env, b, missing, func(p *peer) {
		cfg := connsConfig{Addr: p.addr, N: f.Conns, SessionExpiry: f.Load.SessionExpiry, PID: p.pid(), Label: label}
		if !f.Quiet {
			cfg.Progress = stderr
		}
		r, err := runConns(ctx, cfg)
		if err != nil {
			r.Error = err.Error()
		}
		res = r
	})
	res.Broker, res.Missing = b, why
	if err != nil {
		res.Error = err.Error()
	}
	if !f.Quiet && why == "" {
		fmt.Fprintf(stderr, "%s: %d connections, %s per connection %s\n", label, res.Established, fmtBytes(res.BytesPerConn), res.Error)
	}
	return res
}
