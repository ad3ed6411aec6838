package serve

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oncemq/oncemq/mqtt"
)

// limits are the settings that bound what clients may make the broker hold, as mqtt.Options takes
// them. Each has a row in options.
type limits struct {
	MessageCache     int64
	MaxQueuedBytes   int64
	QueueFull        mqtt.QueueFullPolicy
	MaxSubscriptions int
	MaxSessions      int
	MaxRetained      int
	MaxRetainedBytes int64
	MaxWillSize      int
	MaxConnections   int
	WriteQueueBytes  int
	ReadBudgetBytes  int64
	PacketTimeout    time.Duration
	ReceiveMaximum   int
	MaxKeepAlive     int
	MaxSessionExpiry uint32
}

// apply copies the limits into o.
func (l limits) apply(o *mqtt.Options) {
	o.MessageCache, o.MaxQueuedBytes, o.QueueFull = l.MessageCache, l.MaxQueuedBytes, l.QueueFull
	o.MaxSubscriptions, o.MaxSessions = l.MaxSubscriptions, l.MaxSessions
	o.MaxRetained, o.MaxRetainedBytes, o.MaxWillSize = l.MaxRetained, l.MaxRetainedBytes, l.MaxWillSize
	o.MaxConnections, o.WriteQueueBytes, o.ReadBudgetBytes = l.MaxConnections, l.WriteQueueBytes, l.ReadBudgetBytes
	o.PacketTimeout, o.ReceiveMaximum = l.PacketTimeout, l.ReceiveMaximum
	o.MaxKeepAlive, o.MaxSessionExpiry = l.MaxKeepAlive, l.MaxSessionExpiry
}

// limitOptions are the rows of options for the limits.
var limitOptions = []option{
	{"message-cache", "ONCEMQ_MESSAGE_CACHE", "BYTES", "32MiB", "most bytes of message bodies kept in memory once they are in the file\n" +
		"(queued for offline sessions, or read back to be sent)",
		bytesSetter(func(c *config, n int64) { c.Limits.MessageCache = n })},
	{"max-queued-bytes", "ONCEMQ_MAX_QUEUED_BYTES", "BYTES", "64MiB", "most bytes of message bodies a session holds, queued or in flight",
		bytesSetter(func(c *config, n int64) { c.Limits.MaxQueuedBytes = n })},
	{"queue-full", "ONCEMQ_QUEUE_FULL", "POLICY", "refuse", "a QoS 1/2 message for a full session: refuse (0x97 before any ack),\ndrop-new or drop-oldest (acknowledged, dropped and counted)", setQueueFull},
	{"max-subscriptions", "ONCEMQ_MAX_SUBSCRIPTIONS", "N", "1000", "most subscriptions per session",
		intSetter(1, func(c *config, n int) { c.Limits.MaxSubscriptions = n })},
	{"max-sessions", "ONCEMQ_MAX_SESSIONS", "N", "200000", "most sessions, online or not",
		intSetter(1, func(c *config, n int) { c.Limits.MaxSessions = n })},
	{"max-retained", "ONCEMQ_MAX_RETAINED", "N", "100000", "most retained messages",
		intSetter(1, func(c *config, n int) { c.Limits.MaxRetained = n })},
	{"max-retained-bytes", "ONCEMQ_MAX_RETAINED_BYTES", "BYTES", "256MiB", "most bytes of retained message bodies",
		bytesSetter(func(c *config, n int64) { c.Limits.MaxRetainedBytes = n })},
	{"max-will-size", "ONCEMQ_MAX_WILL_SIZE", "BYTES", "64KiB", "largest Will Message a CONNECT may carry",
		bytesSetter(func(c *config, n int64) { c.Limits.MaxWillSize = int(n) })},
	{"max-connections", "ONCEMQ_MAX_CONNECTIONS", "N", "100000", "most open connections: past it CONNACK 0x97 (3.1.1: 0x03), a tenth\nabove it connections are closed at accept",
		intSetter(1, func(c *config, n int) { c.Limits.MaxConnections = n })},
	{"write-queue-bytes", "ONCEMQ_WRITE_QUEUE_BYTES", "BYTES", "4MiB", "most bytes queued for one connection's writer",
		bytesSetter(func(c *config, n int64) { c.Limits.WriteQueueBytes = int(n) })},
	{"read-budget-bytes", "ONCEMQ_READ_BUDGET_BYTES", "BYTES", "64MiB", "most bytes of packets being read at once, over all connections",
		bytesSetter(func(c *config, n int64) { c.Limits.ReadBudgetBytes = n })},
	{"packet-timeout", "ONCEMQ_PACKET_TIMEOUT", "DURATION", "30s", "time allowed for the rest of a packet once it started", setPacketTimeout},
	{"receive-maximum", "ONCEMQ_RECEIVE_MAXIMUM", "N", "1024", "QoS 1/2 PUBLISHes a 5.0 client may have unacknowledged (advertised), up to 65535",
		intSetter(1, func(c *config, n int) { c.Limits.ReceiveMaximum = n }, 65535)},
	{"max-keepalive", "ONCEMQ_MAX_KEEPALIVE", "SECONDS", "0", "longest Keep Alive; 0 any. 5.0 clients asking more (or 0) are told it,\n3.1.1 clients are refused (CONNACK 0x02)",
		intSetter(0, func(c *config, n int) { c.Limits.MaxKeepAlive = n }, 65535)},
	{"max-session-expiry", "ONCEMQ_MAX_SESSION_EXPIRY", "SECONDS", "0", "cap on the Session Expiry Interval; 0 none",
		intSetter(0, func(c *config, n int) { c.Limits.MaxSessionExpiry = uint32(n) }, 1<<32-1)},
}

// intSetter parses a whole number of at least lo (and at most hi, if given).
func intSetter(lo int, set func(*config, int), hi ...int) func(*config, string) error {
	return func(c *config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || (len(hi) > 0 && n > hi[0]) {
			if len(hi) > 0 {
				return fmt.Errorf("want a whole number from %d to %d", lo, hi[0])
			}
			return fmt.Errorf("want a whole number of at least %d", lo)
		}
		set(c, n)
		return nil
	}
}

// bytesSetter parses a size: a whole number of bytes, or one with KiB, MiB or GiB.
func bytesSetter(set func(*config, int64)) func(*config, string) error {
	return func(c *config, v string) error {
		mult := int64(1)
		for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
			if len(v) > len(suffix) && v[len(v)-len(suffix):] == suffix {
				v, mult = v[:len(v)-len(suffix)], m
			}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > (1<<62)/mult {
			return errors.New("want a size of at least 1 byte, like 65536, 64KiB, 16MiB or 1GiB")
		}
		set(c, n*mult)
		return nil
	}
}

func setQueueFull(c *config, v string) error {
	p, err := mqtt.ParseQueueFullPolicy(v)
	if err != nil {
		return errors.New("want refuse, drop-new or drop-oldest")
	}
	c.Limits.QueueFull = p
	return nil
}

func setPacketTimeout(c *config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return errors.New("want a positive duration, like 30s")
	}
	c.Limits.PacketTimeout = d
	return nil
}
