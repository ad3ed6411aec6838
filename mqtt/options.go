package mqtt

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/oncemq/oncemq/session"
)

// DataFile is the name of the state file inside Options.DataDir.
const DataFile = "oncemq.db"

// LogFile is the name of the store's write-ahead log beside DataFile (its second segment is
// LogFile + ".1"): every commit is appended and synced there, and applied to DataFile at
// checkpoints. The files are one store: copy, move or delete them together (a backup through the
// admin API is DataFile alone, checkpointed).
const LogFile = "oncemq.wal"

// Options configures a Server. The zero value of each field means its default, so Options{} is a
// broker on 127.0.0.1:1883 with its state in ./data, every commit synced, that accepts anyone.
type Options struct {
	// Addr is the TCP address ListenAndServe listens on; default "127.0.0.1:1883". Serve ignores it.
	Addr string
	// DataDir is the folder of the state file (DataFile); default "./data". It is created if missing.
	DataDir string
	// NoSync skips the fsync after each commit: every guarantee holds against a crash of the
	// process, none against a power loss or kernel crash.
	NoSync bool
	// MessageCache bounds the bytes of message bodies kept in memory for sessions that leave them
	// in the file (durable sessions while offline, and every session after a restart until it sends
	// them); default 32 MiB. Bodies of messages being fanned out, of sessions that are connected or
	// not durable, and of commits under way are kept besides (MaxQueuedBytes bounds the first per
	// session).
	MessageCache int64
	// MaxQueued bounds the messages a session may have waiting (offline, beyond its Receive
	// Maximum, or beyond its connection's write queue). Default 10000.
	MaxQueued int
	// MaxQueuedBytes bounds the bytes of message bodies a session holds, queued or in flight to its
	// client; default 64 MiB. A session that holds nothing takes one message of any size.
	MaxQueuedBytes int64
	// QueueFull is what a QoS 1 or 2 message meets at a full session (MaxQueued or MaxQueuedBytes):
	// by default (QueueFullRefuse) the PUBLISH is refused before it is acknowledged (5.0: PUBACK or
	// PUBREC 0x97; 3.1.1: the connection is closed) and no session gets it; QueueFullDropNew and
	// QueueFullDropOldest acknowledge it and drop, counted.
	QueueFull QueueFullPolicy
	// MaxSubscriptions bounds the subscriptions of one session; past it SUBACK says 0x97 (3.1.1:
	// 0x80). Default 1000.
	MaxSubscriptions int
	// MaxSessions bounds the sessions held, online or not; a CONNECT that would make a new one is
	// refused with CONNACK 0x97 (3.1.1: 0x03). Default 200000.
	MaxSessions int
	// MaxRetained and MaxRetainedBytes bound the retained messages (count, bytes of bodies); a
	// QoS 1 or 2 PUBLISH that would pass them is refused with 0x97, a QoS 0 one is not retained.
	// Defaults 100000 and 256 MiB.
	MaxRetained      int
	MaxRetainedBytes int64
	// MaxWillSize bounds the Will Message of a CONNECT (topic, payload, properties), in bytes; a
	// larger one is refused with CONNACK 0x97 (3.1.1: 0x03). Default 64 KiB.
	MaxWillSize int
	// MaxConnections bounds the open connections: past it a CONNECT is refused with CONNACK 0x97
	// (3.1.1: 0x03), and past a hard cap (a tenth more) a connection is closed as it is accepted.
	// Default 100000.
	MaxConnections int
	// WriteQueueBytes bounds the bytes queued for one connection's writer, whatever the client's
	// Receive Maximum: QoS 1 and 2 messages past it wait in the session's queue and are sent as the
	// client reads; QoS 0 messages past it are dropped and counted. Default 4 MiB.
	WriteQueueBytes int
	// ReadBudgetBytes bounds the bytes of all the packets being read at once, over every connection,
	// so that many half-sent large packets cannot hold their maximum size each; a packet waits for
	// room up to PacketTimeout. Default 64 MiB.
	ReadBudgetBytes int64
	// PacketTimeout is the time allowed for the rest of a packet once its first byte arrived; a
	// peer that stops sending in the middle of a packet is closed. Default 30s.
	PacketTimeout time.Duration
	// MaxKeepAlive is the longest Keep Alive accepted, in seconds: a 5.0 client that asks for more,
	// or for 0, is told this value (Server Keep Alive); a 3.1.1 client is refused with CONNACK 0x02,
	// as 3.1.1 cannot tell it. Default 0: any.
	MaxKeepAlive int
	// MaxSessionExpiry caps the Session Expiry Interval, in seconds: a 5.0 client is told the cap in
	// CONNACK, a 3.1.1 persistent session expires after it. Default 0: no cap.
	MaxSessionExpiry uint32
	// ReceiveMaximum is how many QoS 1 and 2 PUBLISHes a 5.0 client may have unacknowledged,
	// advertised in CONNACK; default 1024, at most 65535. A 3.1.1 client, which is told nothing,
	// may use the whole packet-identifier space.
	ReceiveMaximum int
	// MaxPacketSize is the largest packet accepted, in bytes; default 1 MiB.
	MaxPacketSize int
	// ConnectTimeout is the time allowed between accept and a completed CONNECT, authentication
	// included; default 10s.
	ConnectTimeout time.Duration
	// ResponseTopicPrefix starts the Response Information a 5.0 client gets in CONNACK when it sets
	// Request Response Information to 1: the prefix, the client id and "/" ("reply/<client id>/"),
	// a topic root for the responses the client wants to receive; default "reply/".
	ResponseTopicPrefix string
	// DedupProperty is the 5.0 user property in which a publisher gives a QoS 1 or 2 message its
	// own id (the dedup id), once, before its first send; default "dedup-id". A copy with the same
	// id inside the window (a resend under a new packet id after the publisher lost its state) is
	// answered as the first one was and not routed. See the README, "Exactly-once past the session".
	DedupProperty string
	// DedupJSONField, if set, takes the dedup id from this top-level field of a JSON object
	// payload (a string or a number) when the PUBLISH has no id property: for 3.1.1 publishers,
	// which cannot send properties. A payload that is not JSON or lacks the field is not
	// deduplicated.
	DedupJSONField string
	// DedupScope is "client" (default: ids are unique per publishing client id) or "topic" (per
	// topic: several gateways forwarding the same reading).
	DedupScope string
	// DedupWindow is how long a dedup id is remembered; default 5m. Negative turns dedup off.
	DedupWindow time.Duration
	// DedupMax bounds the ids remembered, the oldest leaving first; default 1,000,000. Negative
	// turns dedup off.
	DedupMax int

	// Logger receives the broker's log; default slog.Default().
	Logger *slog.Logger
	// SysInterval is how often the $SYS/broker/... topics are published; default 10s, and a
	// negative value turns them off. They are QoS 0 and retained in memory only: they never touch
	// the state file.
	SysInterval time.Duration
	// Version is the release named on $SYS/broker/version; default the module version the binary
	// was built with.
	Version string

	// Authenticator decides who may connect; nil accepts every client.
	Authenticator Authenticator
	// Authorizer decides who may publish, subscribe and read what; nil allows everything.
	Authorizer Authorizer
	// Events are called as clients come and go; every field may be nil.
	Events Events
	// OnCommit, if set, is told of every commit: how many changes (records put or deleted) it made
	// durable, all in one write-ahead log record, and how long the log append took, its fdatasync
	// included (a metrics histogram). It runs on the one goroutine that commits, before the
	// acknowledgements that wait for the commit are sent: it must be quick and must not call back
	// into the Server.
	OnCommit func(changes int, took time.Duration)
}

func (o *Options) setDefaults() {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:1883"
	}
	if o.DataDir == "" {
		o.DataDir = "./data"
	}
	o.setLimitDefaults()
	if o.ReceiveMaximum <= 0 || o.ReceiveMaximum > 65535 {
		o.ReceiveMaximum = 1024
	}
	if o.MaxPacketSize <= 0 {
		o.MaxPacketSize = 1 << 20
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SysInterval == 0 {
		o.SysInterval = 10 * time.Second
	}
	if o.Version == "" {
		o.Version = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			o.Version = bi.Main.Version
		}
	}
	if o.DedupProperty == "" {
		o.DedupProperty = "dedup-id"
	}
	if o.ResponseTopicPrefix == "" {
		o.ResponseTopicPrefix = "reply/"
	}
	if o.DedupWindow == 0 {
		o.DedupWindow = 5 * time.Minute
	}
	if o.DedupMax == 0 {
		o.DedupMax = 1_000_000
	}
}

// dedup is the session layer's configuration of Dedup*.
func (o *Options) dedup() (session.DedupOptions, error) {
	d := session.DedupOptions{Property: o.DedupProperty, JSONField: o.DedupJSONField,
		Window: max(o.DedupWindow, 0), Max: max(o.DedupMax, 0)}
	switch o.DedupScope {
	case "", "client":
	case "topic":
		d.TopicScope = true
	default:
		return d, fmt.Errorf("mqtt: Options.DedupScope %q: want client or topic", o.DedupScope)
	}
	return d, nil
}
