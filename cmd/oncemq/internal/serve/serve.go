// Package serve is `oncemq serve`, the broker: its flags and ONCEMQ_* variables, the process-wide
// tuning a long-running broker wants (GOGC, returning memory to the OS after a burst), and the
// signals that shut it down.
package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/mqtt"
)

// shutdownTimeout bounds srv.Shutdown after SIGINT/SIGTERM.
const shutdownTimeout = 10 * time.Second

// defaultGCPercent is the GOGC the broker runs with unless the GOGC variable says otherwise. A broker's
// live heap is small (sessions and in-flight tables) while every message makes short-lived garbage,
// so at Go's default of 100 the collector runs so often that, with its stack shrinking, it costs
// more than the broker's own work: BenchmarkQoS2 (sync=none, 10 publishers) goes from about 28k to
// 50k msgs/s at 400. Idle connections make no garbage, so their memory does not grow with it.
const defaultGCPercent = 400

// tuneGC reads the process's own GOGC, as the runtime does, not Env.Getenv.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// Main runs the broker until SIGINT or SIGTERM. Exit codes: 0 after a clean shutdown, 1 if the
// broker cannot start or fails, 2 for bad flags or environment variables.
func Main(args []string, env cli.Env) int {
	cfg, err := parseConfig(args, env.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		writeUsage(env.Stdout)
		return cli.ExitOK
	}
	if err != nil {
		return cli.UsageError(env.Stderr, "oncemq serve", err.Error(), "oncemq serve --help")
	}

	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	slog.SetDefault(log)
	tuneGC()
	stopTrimming := startTrimming()
	defer stopTrimming()

	// Subscribe before binding, so that a signal arriving during recovery is not lost.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	srv, ln, err := newServer(cfg, log)
	if err != nil {
		fmt.Fprintf(env.Stderr, "oncemq: %v\n", err)
		return cli.ExitFailure
	}
	log.Info("oncemq started", "version", env.Version, "listen", ln.Addr().String(), "data", cfg.DataDir,
		"sync", cfg.Sync, "max_queued", cfg.MaxQueued)
	return serveUntilSignal(srv, ln, sigs, log)
}

// newServer opens the store and binds the listener: the one place that knows how package mqtt is
// configured.
func newServer(cfg config, log *slog.Logger) (*mqtt.Server, net.Listener, error) {
	opts := mqtt.Options{
		DataDir:   cfg.DataDir,
		NoSync:    cfg.Sync == "none",
		MaxQueued: cfg.MaxQueued,
		Logger:    log,
	}
	cfg.Limits.apply(&opts)
	srv, err := mqtt.New(opts)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		srv.Close()
		return nil, nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	return srv, ln, nil
}

// serveUntilSignal serves until a signal comes, or Serve fails, then shuts the broker down and
// returns the exit code.
func serveUntilSignal(srv *mqtt.Server, ln net.Listener, sigs <-chan os.Signal, log *slog.Logger) int {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	code, serveReturned := cli.ExitOK, false
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String(), "timeout", shutdownTimeout)
	case err := <-served:
		// Serve returns only after Shutdown, so this is a failure; still close the store cleanly.
		log.Error("serve stopped", "err", err)
		code, serveReturned = cli.ExitFailure, true
	}

	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if !shutdown(ctx, srv, sigs, log) {
		return cli.ExitFailure
	}
	if !serveReturned {
		select {
		case err := <-served:
			if !errors.Is(err, mqtt.ErrServerClosed) {
				log.Error("serve", "err", err)
				code = cli.ExitFailure
			}
		case <-ctx.Done():
			log.Error("serve did not return after shutdown")
			code = cli.ExitFailure
		}
	}
	if code == cli.ExitOK {
		log.Info("oncemq stopped")
	}
	return code
}

// shutdown shuts srv down within ctx; false if that failed or a second signal cut it short.
func shutdown(ctx context.Context, srv *mqtt.Server, sigs <-chan os.Signal, log *slog.Logger) bool {
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			log.Error("shutdown", "err", err)
			return false
		}
		return true
	case sig := <-sigs:
		// A second signal: stop now. Committed state is durable, so this is a crash, not a loss.
		log.Warn("second signal, exiting without waiting for shutdown", "signal", sig.String())
		return false
	}
}
