package mqtt

import (
	"context"
	"log/slog"
	"net"
)

// Config is what the broker needs to run. The zero value of each field means its default.
type Config struct {
	Listen    string       // TCP address; default "127.0.0.1:1883"
	DataDir   string       // folder of oncemq.db; default "./data"
	NoSync    bool         // --sync none: do not fsync commits
	MaxQueued int          // per-session queue bound (offline or over Receive Maximum); default 10000
	Logger    *slog.Logger // default slog.Default()
}

// Server is a running broker: a listener, its connections, and the session state.
type Server struct{}

// New opens the data directory, recovers the durable state, and binds the listener. It fails with a
// message naming the file if the store is corrupt or used by another process.
func New(cfg Config) (*Server, error) { panic("todo") }

// Addr is the address the listener is bound to (useful with port 0).
func (s *Server) Addr() net.Addr { panic("todo") }

// Serve accepts connections until Shutdown; it returns nil after a clean shutdown.
func (s *Server) Serve() error { panic("todo") }

// Shutdown stops accepting, tells 5.0 clients DISCONNECT 0x8B, closes every connection, waits for
// the commits under way and closes the store.
func (s *Server) Shutdown(ctx context.Context) error { panic("todo") }
