package main

import (
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/mqtt"
)

// startOncemqBinary runs the oncemq binary on a free port and a fresh data directory, as compare
// runs its peers.
func startOncemqBinary(t *testing.T, args ...string) *oncemqtest.Broker {
	t.Helper()
	return oncemqtest.StartBroker(t, oncemqtest.Build(t), t.TempDir(), nil, args...)
}

// startOncemq runs an in-process broker on a free port and a fresh data directory, for the
// benchmarks: a CPU profile of the test process then shows the broker.
func startOncemq(tb testing.TB, noSync bool) string {
	tb.Helper()
	srv, err := mqtt.New(mqtt.Options{
		DataDir: tb.TempDir(),
		NoSync:  noSync,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, mqtt.ErrServerClosed) {
			tb.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func TestEndToEndQoS2(t *testing.T) {
	addr := startOncemqBinary(t).Addr
	load := defaultLoad
	load.Count, load.Drain, load.Settle = 200, 20*time.Second, 100*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	res, err := runWorkload(ctx, runConfig{Addr: addr, Workload: workload{Name: "e2e", Pubs: 2, Subs: 1, QoS: 2}, Load: load})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Published != 200 || res.Expected != 200 || res.Lost != 0 || res.Duplicates != 0 || res.PublishErrors != 0 ||
		res.Invalid != 0 || res.DrainTimedOut {
		t.Errorf("published %d expected %d lost %d dup %d errors %d (%s) invalid %d drain timed out %v",
			res.Published, res.Expected, res.Lost, res.Duplicates, res.PublishErrors, res.FirstError, res.Invalid, res.DrainTimedOut)
	}
	if v := res.violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
	if res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P99 || res.DeliverRate <= 0 {
		t.Errorf("implausible figures: %+v", res)
	}
}

// qos1-window20 keeps its 20 publishes in flight whatever --window says, from its one publisher.
func TestEndToEndWindow20(t *testing.T) {
	addr := startOncemqBinary(t).Addr
	wl, err := findWorkload("qos1-window20")
	if err != nil {
		t.Fatal(err)
	}
	load := defaultLoad
	load.Count, load.Window, load.Drain, load.Settle = 300, 3, 20*time.Second, 100*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	res, err := runWorkload(ctx, runConfig{Addr: addr, Workload: wl, Load: load})
	if err != nil {
		t.Fatal(err)
	}
	if res.Window != 20 || res.Publishers != 1 || res.QoS != 1 || res.Published != 300 || res.Lost != 0 || res.PublishErrors != 0 {
		t.Errorf("window %d publishers %d QoS %d published %d lost %d errors %d, want 20, 1, 1, 300, 0, 0",
			res.Window, res.Publishers, res.QoS, res.Published, res.Lost, res.PublishErrors)
	}
}

func TestEndToEndConns(t *testing.T) {
	b := startOncemqBinary(t, "--sync", "none")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// 20 per source address: 50 connections from 127.0.0.1, .2 and .3.
	res, err := runConns(ctx, connsConfig{Addr: b.Addr, N: 50, SessionExpiry: 3600, PID: b.Proc().Pid(), PerSource: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Established != 50 || res.Failed != 0 || res.RSSAfterKiB == 0 {
		t.Errorf("conns: %+v", res)
	}
}

func TestPlotAndTables(t *testing.T) {
	rep := &compareReport{
		Brokers: []string{"oncemq-always", "mosquitto", "mochi"}, Workloads: []string{"qos2-1to1", "conns"}, Sizes: []int{16},
		Runs: []*Result{
			{Broker: "oncemq-always", Workload: "qos2-1to1", QoS: 2, PayloadBytes: 16, DeliverRate: 30000, Latency: Latency{P99: 5}},
			{Broker: "mosquitto", Workload: "qos2-1to1", QoS: 2, PayloadBytes: 16, DeliverRate: 10000, Latency: Latency{P99: 8}},
			{Broker: "mochi", Workload: "qos2-1to1", QoS: 2, PayloadBytes: 16, Missing: "not installed"},
		},
		Conns: []*ConnsResult{{Broker: "oncemq-always", Established: 10, Target: 10, BytesPerConn: 4096}, {Broker: "mochi", Missing: "x"}},
	}
	path := filepath.Join(t.TempDir(), "p.png")
	if err := writePlot(path, rep); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("plot is not a PNG: %v", err)
	}
	var sb strings.Builder
	printCompareTables(&sb, rep)
	printTargets(&sb, rep)
	for _, want := range []string{"| qos2-1to1 | 16 B | oncemq-always | 0 | 30000 | 3.00x |", "missing: not installed", "met     oncemq-always qos2-1to1 delivered msg/s >= 1.5x mosquitto", "met     oncemq-always qos2-1to1 p99"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, sb.String())
		}
	}
}

// TestMain lets the test binary act as oncemq-bench itself, so that the benchmarks below can run
// the load in a child process and a CPU profile of the test process shows the broker alone.
func TestMain(m *testing.M) {
	if os.Getenv("ONCEMQ_BENCH_AS_MAIN") == "1" {
		main()
	}
	code := m.Run()
	oncemqtest.RemoveBuilds()
	os.Exit(code)
}

// BenchmarkQoS2OneToOne runs qos2-1to1 (20,000 messages) against an in-process oncemq, with the
// clients in a child process, for profiling the broker:
//
//	go test ./cmd/oncemq-bench -run '^$' -bench QoS2OneToOne -benchtime 3x -cpuprofile cpu.out
//	go tool pprof -top cpu.out
func BenchmarkQoS2OneToOne(b *testing.B) {
	benchWorkload(b, workloads[0], false)
}

// BenchmarkQoS2OneToOneNoSync is the same with --sync none.
func BenchmarkQoS2OneToOneNoSync(b *testing.B) {
	benchWorkload(b, workloads[0], true)
}

func benchWorkload(b *testing.B, wl workload, noSync bool) {
	addr := startOncemq(b, noSync)
	dir := b.TempDir()
	out := filepath.Join(dir, "run.json")
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "run", "--addr", addr, "--workload", wl.Name, "--count", "20000", "--quiet", "--out", dir)
		cmd.Env = append(os.Environ(), "ONCEMQ_BENCH_AS_MAIN=1")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, msg)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			b.Fatal(err)
		}
		var res Result
		if err := json.Unmarshal(data, &res); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.DeliverRate, "delivered/s")
		b.ReportMetric(res.Latency.P99, "p99-ms")
	}
}
