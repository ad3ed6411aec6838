package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/hooks/storage/bolt"
	"github.com/mochi-mqtt/server/v2/listeners"
	"go.etcd.io/bbolt"
)

// cmdMochiPeer is the hidden `oncemq-bench mochi-peer --listen ADDR [--bolt FILE]`: mochi-mqtt
// v2 with its default capabilities and the allow-all auth hook, and with --bolt its bbolt storage
// hook (hooks/storage/bolt, which writes each change in its own bbolt transaction, synced as bbolt
// does by default). compare runs it as a child process so that its memory and CPU are its own.
// It serves until SIGINT or SIGTERM.
func cmdMochiPeer(ctx context.Context, con console, args []string) (int, error) {
	fs := newFlagSet("mochi-peer")
	listen := fs.String("listen", "127.0.0.1:1883", "TCP address to listen on")
	boltFile := fs.String("bolt", "", "bbolt file for mochi's storage hook (default: no storage)")
	if err := parseFlags(fs, args, con.out, "Usage: oncemq-bench mochi-peer [--listen ADDR] [--bolt FILE]\n\nThe mochi-mqtt broker that compare starts as a child process.\n"); err != nil {
		return 2, err
	}

	log := slog.New(slog.NewTextHandler(con.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := mochi.New(&mochi.Options{Logger: log})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return 1, err
	}
	if *boltFile != "" {
		err := srv.AddHook(new(bolt.Hook), &bolt.Options{
			Path:    *boltFile,
			Options: &bbolt.Options{Timeout: 500 * time.Millisecond},
		})
		if err != nil {
			return 1, fmt.Errorf("bolt hook: %w", err)
		}
	}
	if err := srv.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: *listen})); err != nil {
		return 1, err
	}
	if err := srv.Serve(); err != nil {
		return 1, err
	}
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		return 1, err
	}
	return 0, nil
}
