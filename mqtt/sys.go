package mqtt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// sysPrefix starts the topics the broker publishes about itself. Clients may not publish there
// (handlePublish, the Will check in CONNECT, Server.Publish), so the broker's values are the only
// ones, and nothing under it is ever durable.
const sysPrefix = "$SYS/"

// isSys reports whether topicName is one of the broker's own.
func isSys(topicName string) bool { return strings.HasPrefix(topicName, sysPrefix) }

// loadWindows are mosquitto's load averages: 1, 5 and 15 minutes.
var loadWindows = [...]struct {
	name    string
	seconds float64
}{{"1min", 60}, {"5min", 300}, {"15min", 900}}

// sysState is what the $SYS publisher remembers between two updates.
type sysState struct {
	at    time.Time
	stats Stats
	loads map[string]*[len(loadWindows)]float64 // by counter: messages/received, bytes/sent...
}

// sysLoop publishes the $SYS topics at once and then every interval, until done is closed.
func (s *Server) sysLoop(interval time.Duration, done <-chan struct{}) {
	st := &sysState{at: s.started, loads: make(map[string]*[len(loadWindows)]float64)}
	s.publishSys(st, time.Now(), true)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-ticker.C:
			s.publishSys(st, now, false)
		}
	}
}

// publishSys publishes one update of every $SYS topic as volatile retained messages: in memory,
// QoS 0, never committed.
func (s *Server) publishSys(st *sysState, now time.Time, initial bool) {
	cur := s.Stats()
	var msgs []*inflight.Message
	add := func(name, value string) {
		msgs = append(msgs, &inflight.Message{Topic: sysPrefix + "broker/" + name, Payload: []byte(value),
			Created: now.UnixNano()})
	}
	num := func(name string, v uint64) { add(name, strconv.FormatUint(v, 10)) }
	add("version", "oncemq version "+s.opts.Version)
	add("uptime", fmt.Sprintf("%d seconds", int64(now.Sub(s.started).Seconds())))
	num("clients/connected", uint64(cur.SessionsOnline))
	num("clients/disconnected", uint64(cur.Sessions-cur.SessionsOnline))
	num("clients/total", uint64(cur.Sessions))
	num("messages/received", cur.PacketsReceived)
	num("messages/sent", cur.PacketsSent)
	num("publish/messages/received", cur.PublishReceived)
	num("publish/messages/sent", cur.PublishSent)
	num("bytes/received", cur.BytesReceived)
	num("bytes/sent", cur.BytesSent)
	num("retained messages/count", uint64(cur.Retained))
	num("subscriptions/count", uint64(cur.Subscriptions))
	num("store/commits", cur.Commits)
	p99 := cur.CommitLatency.Sub(st.stats.CommitLatency).Quantile(0.99)
	add("store/commit-latency-p99", strconv.FormatFloat(float64(p99)/float64(time.Millisecond), 'f', 3, 64))
	num("inflight/inbound", uint64(cur.InboundInFlight))
	num("inflight/outbound", uint64(cur.OutboundInFlight))
	num("queued/messages", uint64(cur.Queued))

	elapsed := now.Sub(st.at).Seconds()
	for _, c := range []struct {
		name      string
		now, last uint64
	}{
		{"messages/received", cur.PacketsReceived, st.stats.PacketsReceived},
		{"messages/sent", cur.PacketsSent, st.stats.PacketsSent},
		{"publish/received", cur.PublishReceived, st.stats.PublishReceived},
		{"publish/sent", cur.PublishSent, st.stats.PublishSent},
		{"bytes/received", cur.BytesReceived, st.stats.BytesReceived},
		{"bytes/sent", cur.BytesSent, st.stats.BytesSent},
	} {
		loads := st.loads[c.name]
		if loads == nil {
			loads = new([len(loadWindows)]float64)
			st.loads[c.name] = loads
		}
		for i, w := range loadWindows {
			if !initial {
				loads[i] = nextLoad(loads[i], c.now-c.last, elapsed, w.seconds)
			}
			add("load/"+c.name+"/"+w.name, strconv.FormatFloat(loads[i], 'f', 2, 64))
		}
	}
	st.at, st.stats = now, cur
	if eng, err := s.engine(); err == nil { // while the store heals, nothing is published
		eng.broker.PublishVolatile(msgs)
	}
}

// nextLoad is mosquitto's load average: an exponentially weighted moving average, over window
// seconds, of the rate per minute. delta happened in the last elapsed seconds. The first update
// publishes 0, as mosquitto's does.
func nextLoad(prev float64, delta uint64, elapsed, window float64) float64 {
	if elapsed <= 0 {
		return prev
	}
	rate := float64(delta) * 60 / elapsed
	return rate + math.Exp(-elapsed/window)*(prev-rate)
}
