package mqtt

import (
	"log/slog"
	"time"
)

// DataFile is the name of the state file inside Options.DataDir.
const DataFile = "oncemq.db"

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
	// MaxQueued bounds the messages a session may have waiting (offline, or beyond its Receive
	// Maximum); past it, new messages for that session are dropped and counted. Default 10000.
	MaxQueued int
	// ReceiveMaximum is how many QoS 1 and 2 PUBLISHes a 5.0 client may have unacknowledged,
	// advertised in CONNACK; default 1024, at most 65535.
	ReceiveMaximum int
	// MaxPacketSize is the largest packet accepted, in bytes; default 1 MiB.
	MaxPacketSize int
	// ConnectTimeout is the time allowed between accept and a completed CONNECT, authentication
	// included; default 10s.
	ConnectTimeout time.Duration
	// Logger receives the broker's log; default slog.Default().
	Logger *slog.Logger

	// Authenticator decides who may connect; nil accepts every client.
	Authenticator Authenticator
	// Authorizer decides who may publish, subscribe and read what; nil allows everything.
	Authorizer Authorizer
	// Events are called as clients come and go; every field may be nil.
	Events Events
	// OnCommit, if set, is told of every commit to the state file: how many records it wrote and how
	// long the transaction took, its sync included (a metrics histogram). It runs on the one
	// goroutine that commits, before the acknowledgements that wait for the commit are sent: it must
	// be quick and must not call back into the Server.
	OnCommit func(records int, took time.Duration)
}

func (o *Options) setDefaults() {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:1883"
	}
	if o.DataDir == "" {
		o.DataDir = "./data"
	}
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
}
