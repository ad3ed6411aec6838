package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oncemq/oncemq/mqtt"
)

// metrics is the broker's Prometheus registry: its own, not the process-wide default, so that
// nothing else linked into the binary adds to it. The broker's numbers are read from mqtt.Stats at
// each scrape (brokerCollector); only the commit histograms are fed as commits happen.
type metrics struct {
	reg           *prometheus.Registry
	commitRecords prometheus.Histogram
	commitLatency prometheus.Histogram
}

func newMetrics(server func() *mqtt.Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		commitRecords: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "oncemq_store_commit_records",
			Help:    "Changes (records put or deleted) made durable per store commit: one log record and one sync for all of them (group commit).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 15), // 1 .. 16384
		}),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "oncemq_store_commit_duration_seconds",
			Help:    "Duration of a store commit (the log append, its fdatasync included); every QoS 1/2 acknowledgement waits for one.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16), // 100µs .. 3.3s
		}),
	}
	m.reg.MustRegister(m.commitRecords, m.commitLatency, &brokerCollector{server: server},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeCommit feeds the histograms; it runs on the store's committer goroutine, so it is two
// lock-free Observe calls.
func (m *metrics) observeCommit(changes int, took time.Duration) {
	m.commitRecords.Observe(float64(changes))
	m.commitLatency.Observe(took.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// desc builds a metric description with the given variable labels.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The broker's metrics. Labels are bounded: listener addresses, reason names, QoS, direction;
// never a client id.
var (
	descConnections = desc("oncemq_connections", "Open network connections, by the listener that accepted them.", "listener")
	descAccepted    = desc("oncemq_connections_accepted_total", "Connections accepted since start.")
	descRefused     = desc("oncemq_connections_refused_total", "CONNECTs refused since start, by CONNACK reason.", "reason")
	descSessions    = desc("oncemq_sessions", "Sessions held, online (a connection holds it) or offline.", "state")
	descReceived    = desc("oncemq_received_messages_total", "PUBLISH packets received from clients, by QoS, resends included.", "qos")
	descRecvBytes   = desc("oncemq_received_bytes_total", "Payload bytes of the PUBLISH packets received, by QoS.", "qos")
	descSent        = desc("oncemq_sent_messages_total", "PUBLISH packets sent to clients, by QoS, resends included.", "qos")
	descSentBytes   = desc("oncemq_sent_bytes_total", "Payload bytes of the PUBLISH packets sent, by QoS.", "qos")
	descInflight    = desc("oncemq_inflight_ids", "Packet ids in flight: inbound QoS 2 ids awaiting PUBREL, outbound ids awaiting PUBACK, PUBREC or PUBCOMP.", "direction")
	descQueued      = desc("oncemq_queued_messages", "Messages waiting in session queues (offline, or beyond the client's Receive Maximum).")
	descQueuedBytes = desc("oncemq_queued_bytes", "Bytes (topic and payload) of the messages sessions hold, queued or in flight.")
	descDropped     = desc("oncemq_dropped_messages_total", "Messages dropped on purpose instead of delivered to a session, by reason.", "reason")
	descExpired     = desc("oncemq_sessions_expired_total", "Sessions removed by Session Expiry since start.")
	descRetained    = desc("oncemq_retained_messages", "Retained messages held.")
	descCommits     = desc("oncemq_store_commits_total", "Store transactions committed, each one fsync unless --sync none.")
	descBatches     = desc("oncemq_store_batches_total", "Changes committed (a PUBLISH and its fan-out, an ack, a CONNECT...).")
	descRecords     = desc("oncemq_store_records_total", "Records written to the store.")
	descFailures    = desc("oncemq_store_commit_failures_total", "Batches whose commit failed.")
	descFailed      = desc("oncemq_store_failed", "1 once a commit failed: QoS 1 and 2 are refused until a restart; 0 while healthy.")
	descRecovery    = desc("oncemq_store_recovery_duration_seconds", "How long the broker took to open and read back the store at start.")
)

// brokerCollector reads mqtt.Stats once per scrape. Before the store is recovered it has nothing
// to say.
type brokerCollector struct {
	server func() *mqtt.Server
}

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnections, descAccepted, descRefused, descSessions, descReceived,
		descRecvBytes, descSent, descSentBytes, descInflight, descQueued, descQueuedBytes, descDropped, descExpired,
		descRetained, descCommits, descBatches, descRecords, descFailures, descFailed, descRecovery} {
		ch <- d
	}
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	srv := c.server()
	if srv == nil {
		return
	}
	st := srv.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for ln, n := range st.ConnectionsByListener {
		gauge(descConnections, float64(n), ln)
	}
	counter(descAccepted, st.Accepted)
	for code, n := range st.Refused {
		counter(descRefused, n, code.String())
	}
	gauge(descSessions, float64(st.SessionsOnline), "online")
	gauge(descSessions, float64(st.Sessions-st.SessionsOnline), "offline")
	for q := range 3 {
		qos := strconv.Itoa(q)
		counter(descReceived, st.Received[q], qos)
		counter(descRecvBytes, st.ReceivedBytes[q], qos)
		counter(descSent, st.Sent[q], qos)
		counter(descSentBytes, st.SentBytes[q], qos)
	}
	gauge(descInflight, float64(st.InboundInFlight), "inbound")
	gauge(descInflight, float64(st.OutboundInFlight), "outbound")
	gauge(descQueued, float64(st.Queued))
	gauge(descQueuedBytes, float64(st.QueuedBytes))
	counter(descDropped, st.DroppedQueueFull, string(mqtt.DropQueueFull))
	counter(descDropped, st.DroppedExpired, string(mqtt.DropExpired))
	counter(descDropped, st.DroppedTooLarge, string(mqtt.DropTooLarge))
	counter(descDropped, st.DroppedUnreadable, string(mqtt.DropUnreadable))
	counter(descDropped, st.DroppedQoS0, "qos0-connection-overflow")
	counter(descDropped, st.NotAuthorized, "not-authorized")
	counter(descDropped, st.DroppedSharedNoMember, string(mqtt.DropSharedNoMember))
	counter(descDropped, st.DroppedSharedMemberGone, string(mqtt.DropSharedMemberGone))
	counter(descExpired, st.SessionsExpired)
	gauge(descRetained, float64(st.Retained))
	counter(descCommits, st.Commits)
	counter(descBatches, st.Batches)
	counter(descRecords, st.Records)
	counter(descFailures, st.CommitFailures)
	gauge(descFailed, boolFloat(st.StoreFailed))
	gauge(descRecovery, st.Recovery.Seconds())
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
