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
	f, err := parseRunFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Addr != "127.0.0.1:1883" || f.Workload != workloads[0] || f.Load != defaultLoad || f.Quiet || f.JSON != "" {
		t.Errorf("defaults: %+v", f)
	}
}

func TestParseRunFlagsWorkloadAndOverrides(t *testing.T) {
	f, err := parseRunFlags([]string{"--workload", "qos2-fanout", "--size", "4096", "--count", "0", "--duration", "5s",
		"--window", "64", "--rate", "1000", "--json", "out.json", "--quiet", "--session-expiry", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Workload.Name != "qos2-fanout" || f.Workload.Subs != 50 || f.Workload.Pubs != 1 || f.Workload.QoS != 2 {
		t.Errorf("workload %+v", f.Workload)
	}
	want := defaultLoad
	want.Size, want.Count, want.Duration, want.Window, want.Rate, want.SessionExpiry = 4096, 0, 5*time.Second, 64, 1000, 0
	if f.Load != want || f.JSON != "out.json" || !f.Quiet {
		t.Errorf("load %+v json %q quiet %v", f.Load, f.JSON, f.Quiet)
	}

	f, err = parseRunFlags([]string{"--workload", "qos1-fanin", "--pubs", "2", "--qos", "2"})
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
		{[]string{"--bogus"}, "not defined"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--session-expiry", "-1"}, "session-expiry"},
	}
	for _, tt := range tests {
		_, err := parseRunFlags(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseRunFlags(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestParseHelp(t *testing.T) {
	old := stdout
	stdout = io.Discard
	defer func() { stdout = old }()
	if _, err := parseRunFlags([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}
}

func TestParseCompareFlags(t *testing.T) {
	f, err := parseCompareFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Brokers, allBrokers) || len(f.Workloads) != len(workloads)+1 || !slices.Equal(f.Sizes, []int{16, 4096}) ||
		f.Conns != 10000 || f.Load.Count != 20000 || f.Load.Duration != time.Minute || f.Mosquitto != "/usr/sbin/mosquitto" {
		t.Errorf("defaults: %+v", f)
	}

	f, err = parseCompareFlags([]string{"--brokers", "mosquitto, oncemq-none", "--workloads", "conns,qos0-fanin", "--sizes", "16",
		"--conns", "50000", "--plot", "p.png", "--oncemq", "/bin/oncemq"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Brokers, []string{"mosquitto", "oncemq-none"}) || !slices.Equal(f.Workloads, []string{"conns", "qos0-fanin"}) ||
		f.Conns != 50000 || f.Plot != "p.png" || f.Oncemq != "/bin/oncemq" {
		t.Errorf("parsed: %+v", f)
	}

	for _, args := range [][]string{
		{"--brokers", "hivemq"},
		{"--workloads", "qos3"},
		{"--sizes", "big"},
		{"--sizes", "8"},
		{"--conns", "50001"},
		{"--brokers", ","},
	} {
		if _, err := parseCompareFlags(args); err == nil {
			t.Errorf("parseCompareFlags(%q) accepted", args)
		}
	}
}

func TestParseConnsFlags(t *testing.T) {
	f, err := parseConnsFlags([]string{"--n", "500", "--pid", "42", "--addr", "127.0.0.2:1999"})
	if err != nil {
		t.Fatal(err)
	}
	if f.N != 500 || f.PID != 42 || f.Addr != "127.0.0.2:1999" || f.SessionExpiry != 3600 {
		t.Errorf("parsed: %+v", f)
	}
	for _, args := range [][]string{{"--n", "0"}, {"--n", "50001"}, {"--session-expiry", "4294967296"}} {
		if _, err := parseConnsFlags(args); err == nil {
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
