package main

import (
	"bufio"
	"context"
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
func cmdCompare(ctx context.Context, con console, args []string) (int, error) {
	f, err := parseCompareFlags(args, con.out)
	if err != nil {
		return 2, err
	}
	out, err := outputDir(f.Out, "compare")
	if err != nil {
		return 1, err
	}
	if err := raiseFileLimit(uint64(f.Conns) + 4096); err != nil {
		fmt.Fprintf(con.err, "oncemq-bench compare: warning: %v\n", err)
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
	c := &comparison{f: f, con: con, env: env, missing: map[string]string{}, start: time.Now(), phases: countPhases(f)}
	if !f.Quiet && isTerminal(con.err) {
		c.progress = con.err
	}
	c.note("%d measurements on %s (a default run takes %s); results into %s",
		c.phases, strings.Join(f.Brokers, ", "), compareDuration, out)
	if slices.ContainsFunc(f.Brokers, func(b string) bool { return strings.HasPrefix(b, "oncemq") }) {
		env.oncemq, env.oncemqErr = prepareOncemq(ctx, c, tmp)
		if env.oncemqErr != nil {
			fmt.Fprintf(con.err, "oncemq-bench compare: oncemq: %v\n", env.oncemqErr)
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
	c.runAll(ctx, rep)
	code, err := finishCompare(con, rep, out)
	if err != nil {
		return 1, err
	}
	if ctx.Err() != nil {
		return 1, ctx.Err()
	}
	return code, nil
}

// countPhases is how many measurements compare makes: each message workload with each size on
// each broker, and the conns workload on each broker.
func countPhases(f compareFlags) int {
	n := 0
	for _, w := range f.Workloads {
		if w == connsWorkload {
			n += len(f.Brokers)
		} else {
			n += len(f.Sizes) * len(f.Brokers)
		}
	}
	return n
}

// finishCompare prints the tables, the targets and any failed runs, writes them with the JSON and
// the plot into out, and returns the exit status the results call for.
func finishCompare(con console, rep *compareReport, out string) (int, error) {
	var tables strings.Builder
	printCompareTables(&tables, rep)
	fmt.Fprintln(&tables)
	printTargets(&tables, rep)
	fmt.Fprint(con.out, tables.String())
	code, bad, why := compareStatus(rep)
	if len(bad) > 0 {
		printViolations(con.err, bad, why)
	}
	if err := os.WriteFile(filepath.Join(out, "compare.md"), []byte(tables.String()), 0o644); err != nil {
		return 1, fmt.Errorf("write results: %w", err)
	}
	if err := writeJSON(filepath.Join(out, "compare.json"), rep); err != nil {
		return 1, err
	}
	if err := writePlot(filepath.Join(out, "compare.png"), rep); err != nil {
		return 1, fmt.Errorf("plot: %w", err)
	}
	fmt.Fprintf(con.out, "\nresults written to %s (compare.md, compare.json, compare.png)\n", out)
	return code, nil
}

// compareStatus is the exit status of a compare run, and the runs that broke exactly-once or
// failed with why. Only oncemq's rows make the status 1 (an oncemq that did not run too): the
// peers' failures are reported, not fatal.
func compareStatus(rep *compareReport) (code int, bad []string, why [][]string) {
	for _, r := range rep.Runs {
		oncemq := strings.HasPrefix(r.Broker, "oncemq")
		if v := r.violations(); len(v) > 0 && r.Missing == "" {
			bad, why = append(bad, describeRun(r)), append(why, v)
			if oncemq {
				code = 1
			}
		}
		if oncemq && r.Missing != "" {
			code = 1
		}
	}
	for _, c := range rep.Conns {
		if strings.HasPrefix(c.Broker, "oncemq") && (c.Missing != "" || c.Error != "") {
			code = 1
		}
	}
	return code, bad, why
}

// prepareOncemq returns the oncemq binary: --oncemq, or built from the repository.
func prepareOncemq(ctx context.Context, c *comparison, tmp string) (string, error) {
	if c.f.Oncemq != "" {
		if _, err := os.Stat(c.f.Oncemq); err != nil {
			return "", err
		}
		return c.f.Oncemq, nil
	}
	repo := c.f.Repo
	if repo == "" {
		var err error
		if repo, err = findRepo(); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(tmp, "oncemq")
	c.note("building oncemq from %s", repo)
	return bin, buildOncemq(ctx, repo, bin)
}
