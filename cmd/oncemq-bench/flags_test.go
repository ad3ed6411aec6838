package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRunFlagsDefaults(t *testing.T) {
	f, err := parseRunFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.Addr != "127.0.0.1:1883" || f.Workload != workloads[0] || f.Load != defaultLoad || f.Quiet || f.Out != "" {
		t.Errorf("defaults: %+v", f)
	}
}

func TestParseRunFlagsWorkloadAndOverrides(t *testing.T) {
	f, err := parseRunFlags([]string{"--workload", "qos2-fanout", "--size", "4096", "--count", "0", "--duration", "5s",
		"--window", "64", "--rate", "1000", "--out", "results", "--quiet", "--session-expiry", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.Workload.Name != "qos2-fanout" || f.Workload.Subs != 50 || f.Workload.Pubs != 1 || f.Workload.QoS != 2 {
		t.Errorf("workload %+v", f.Workload)
	}
	want := defaultLoad
	want.Size, want.Count, want.Duration, want.Window, want.Rate, want.SessionExpiry = 4096, 0, 5*time.Second, 64, 1000, 0
	if f.Load != want || f.Out != "results" || !f.Quiet {
		t.Errorf("load %+v out %q quiet %v", f.Load, f.Out, f.Quiet)
	}

	f, err = parseRunFlags([]string{"--workload", "qos1-fanin", "--pubs", "2", "--qos", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.Workload != (workload{Name: "custom", Pubs: 2, Subs: 1, QoS: 2}) {
		t.Errorf("overridden workload %+v", f.Workload)
	}
}

func TestParseRunFlagsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "nope"}, "unknown workload"},
		{[]string{"--size", "15"}, "--size 15"},
		{[]string{"--count", "0"}, "--count or --duration"},
		{[]string{"--window", "0"}, "--window 0"},
		{[]string{"--receive-max", "70000"}, "--receive-max"},
		{[]string{"--qos", "3"}, "--qos 3"},
		{[]string{"--pubs", "0"}, "--pubs 0"},
		{[]string{"--subs", "0"}, "--subs 0"},
		{[]string{"--rate", "-1"}, "--rate"},
		{[]string{"--prefix", "a/#"}, "wildcards"},
		{[]string{"--bogus"}, "unknown flag --bogus"},
		{[]string{"--size"}, "flag --size needs a value"},
		{[]string{"--size", "x"}, `invalid value "x" for flag --size`},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--session-expiry", "-1"}, "session-expiry"},
	}
	for _, tt := range tests {
		_, err := parseRunFlags(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseRunFlags(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestParseHelp(t *testing.T) {
	var help strings.Builder
	if _, err := parseRunFlags([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"Usage: oncemq-bench [run] [flags]", "\n  --addr host:port\n", "(default 127.0.0.1:1883)", "\n  --out DIR\n", "system's temp folder"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("run --help lacks %q:\n%s", want, help.String())
		}
	}
}

// TestParseCompareFlags checks compare's defaults: in-memory mochi-mqtt is not among the brokers
// (it deadlocks under QoS 1/2 load) unless --with-mochi asks for it.
func TestParseCompareFlags(t *testing.T) {
	f, err := parseCompareFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Brokers, []string{"oncemq-always", "oncemq-none", "mosquitto", "mochi-bolt"}) || f.WithMochi ||
		len(f.Workloads) != len(workloads) || slices.Contains(f.Workloads, "qos1-window20") || !slices.Equal(f.Sizes, []int{16, 4096}) || f.Conns != 10000 ||
		f.Load.Count != 20000 || f.Load.Duration != time.Minute || f.Mosquitto != "/usr/sbin/mosquitto" || f.Out != "" {
		t.Errorf("defaults: %+v", f)
	}
	if n := countPhases(f); n != 4*2*4+4 {
		t.Errorf("default phases %d, want 36", n)
	}

	f, err = parseCompareFlags([]string{"--brokers", "mosquitto, oncemq-none", "--workloads", "conns,qos0-fanin", "--sizes", "16",
		"--conns", "50000", "--out", "results", "--oncemq", "/bin/oncemq"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Brokers, []string{"mosquitto", "oncemq-none"}) || !slices.Equal(f.Workloads, []string{"conns", "qos0-fanin"}) ||
		f.Conns != 50000 || f.Out != "results" || f.Oncemq != "/bin/oncemq" {
		t.Errorf("parsed: %+v", f)
	}

	for _, args := range [][]string{
		{"--brokers", "hivemq"},
		{"--brokers", "mochi"}, // in-memory mochi only with --with-mochi
		{"--workloads", "qos3"},
		{"--sizes", "big"},
		{"--sizes", "8"},
		{"--conns", "50001"},
		{"--brokers", ","},
	} {
		if _, err := parseCompareFlags(args, io.Discard); err == nil {
			t.Errorf("parseCompareFlags(%q) accepted", args)
		}
	}
}

func TestParseCompareFlagsWithMochi(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--with-mochi"}, []string{"oncemq-always", "oncemq-none", "mosquitto", "mochi", "mochi-bolt"}},
		{[]string{"--with-mochi", "--brokers", "oncemq-none"}, []string{"oncemq-none", "mochi"}},
		{[]string{"--with-mochi", "--brokers", "mochi,mosquitto"}, []string{"mochi", "mosquitto"}},
	}
	for _, tt := range tests {
		f, err := parseCompareFlags(tt.args, io.Discard)
		if err != nil {
			t.Errorf("parseCompareFlags(%q): %v", tt.args, err)
			continue
		}
		if !slices.Equal(f.Brokers, tt.want) {
			t.Errorf("parseCompareFlags(%q): brokers %q, want %q", tt.args, f.Brokers, tt.want)
		}
	}
}

func TestParseConnsFlags(t *testing.T) {
	f, err := parseConnsFlags([]string{"--n", "500", "--pid", "42", "--addr", "127.0.0.2:1999"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.N != 500 || f.PID != 42 || f.Addr != "127.0.0.2:1999" || f.SessionExpiry != 3600 {
		t.Errorf("parsed: %+v", f)
	}
	for _, args := range [][]string{{"--n", "0"}, {"--n", "50001"}, {"--session-expiry", "4294967296"}} {
		if _, err := parseConnsFlags(args, io.Discard); err == nil {
			t.Errorf("parseConnsFlags(%q) accepted", args)
		}
	}
}

func TestConnectPacket(t *testing.T) {
	got := connectPacket("ab", 3600)
	want := []byte{0x10, 20, 0, 4, 'M', 'Q', 'T', 'T', 5, 0, 0, 0, 5, 0x11, 0, 0, 0x0e, 0x10, 0, 2, 'a', 'b'}
	if !slices.Equal(got, want) {
		t.Errorf("connectPacket = % x\nwant             % x", got, want)
	}
	if b := appendVarint(nil, 321); !slices.Equal(b, []byte{0xc1, 0x02}) {
		t.Errorf("appendVarint(321) = % x", b)
	}
}
