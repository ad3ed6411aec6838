package main

import (
	"fmt"
	"strings"
	"time"
)

// workload is the shape of a message test: how many publishers and subscribers, at which QoS.
type workload struct {
	Name string
	Pubs int  // publishers, each on its own topic under the run's prefix
	Subs int  // subscribers, each on PREFIX/#
	QoS  byte // of the publishes and of the subscriptions
	// Window, if not 0, is the publishers' in-flight window whatever --window says: a workload
	// defined by its window.
	Window int
	// OnRequest keeps the workload out of compare's default --workloads.
	OnRequest bool
}

// workloads are the named message tests. Each runs with every payload size compare is given.
var workloads = []workload{
	{Name: "qos2-1to1", Pubs: 10, Subs: 1, QoS: 2},
	{Name: "qos2-fanout", Pubs: 1, Subs: 50, QoS: 2},
	{Name: "qos1-fanin", Pubs: 10, Subs: 1, QoS: 1},
	{Name: "qos0-fanin", Pubs: 10, Subs: 1, QoS: 0},
	// One publisher with 20 QoS 1 messages in flight, as `mosquitto_pub -l -q 1` (its -M default):
	// throughput is then bound by how fast one acknowledgement follows its PUBLISH, a sync with
	// --sync always, and not by how many messages share a sync.
	{Name: "qos1-window20", Pubs: 1, Subs: 1, QoS: 1, Window: 20, OnRequest: true},
}

// params are the run's knobs with what the workload fixes.
func (w workload) params(load loadParams) loadParams {
	if w.Window > 0 {
		load.Window = w.Window
	}
	return load
}

// connsWorkload is the name of the idle-connection test in compare's --workloads.
const connsWorkload = "conns"

// findWorkload returns the named message workload.
func findWorkload(name string) (workload, error) {
	for _, w := range workloads {
		if w.Name == name {
			return w, nil
		}
	}
	return workload{}, fmt.Errorf("unknown workload %q (known: %s)", name, workloadNames())
}

func workloadNames() string {
	var names []string
	for _, w := range workloads {
		names = append(names, w.Name)
	}
	return strings.Join(names, ", ")
}

// defaultWorkloadNames are compare's message workloads when --workloads is not given.
func defaultWorkloadNames() string {
	var names []string
	for _, w := range workloads {
		if !w.OnRequest {
			names = append(names, w.Name)
		}
	}
	return strings.Join(names, ", ")
}

// loadParams are the knobs shared by every message workload.
type loadParams struct {
	Size          int           // payload bytes, at least headerSize
	Count         int           // messages published in all, split over the publishers; 0: until Duration
	Duration      time.Duration // stop publishing after this long; 0: until Count
	Rate          float64       // target publish rate of all publishers together, msgs/s; 0: unpaced
	Window        int           // per-publisher unacknowledged QoS 1/2 publishes
	ReceiveMax    int           // Receive Maximum the subscribers announce
	Drain         time.Duration // how long to wait for deliveries after the last publish
	Settle        time.Duration // extra wait once all expected messages arrived, to catch late duplicates
	SessionExpiry uint32        // Session Expiry Interval of every client, seconds
}

// perPublisher splits a total count over n publishers; the first ones get the remainder.
func perPublisher(total, n, i int) int {
	c := total / n
	if i < total%n {
		c++
	}
	return c
}
