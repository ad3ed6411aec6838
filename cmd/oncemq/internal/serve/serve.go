// Package serve is `oncemq serve`, the broker: its flags and ONCEMQ_* variables, the process-wide
// tuning a long-running broker wants (GOGC, returning memory to the OS after a burst), its
// listeners (TCP, TLS, WebSocket, WebSocket over TLS, all serving one broker), the users and access
// rules (mqtt/auth), and the signals that shut it down (SIGINT, SIGTERM) or reload its files
// (SIGHUP: the password file, the ACL file, the certificates).
package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/admin"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/inflight"
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

// Main runs the broker until SIGINT or SIGTERM; SIGHUP reloads what can be reloaded. Exit codes:
// 0 after a clean shutdown, 1 if the broker cannot start or fails (at once when its store has an
// I/O error), 2 for bad settings (flags, environment variables, config file).
func Main(args []string, env cli.Env) int {
	cfg, err := parseConfig(args, env.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		writeUsage(env.Stdout)
		return cli.ExitOK
	}
	if err != nil {
		return cli.UsageError(env.Stderr, "oncemq serve", err.Error(), "oncemq serve --help")
	}

	log := newLogger(env.Stderr, cfg)
	slog.SetDefault(log)
	tuneGC()
	stopTrimming := startTrimming()
	defer stopTrimming()

	// Subscribe before binding, so that a signal arriving during recovery is not lost.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	adm, stopAdmin, err := startAdmin(cfg, log)
	if err != nil {
		log.Error("oncemq cannot start", "err", err)
		return cli.ExitFailure
	}
	defer stopAdmin()
	srv, lns, reloaders, err := newServer(cfg, env.Version, log, adm)
	if err != nil {
		log.Error("oncemq cannot start", "err", err)
		var damage *inflight.DamageError
		if errors.As(err, &damage) {
			// The list once more, a line each, for the person who reads it: the log line
			// holds it escaped in one attribute.
			fmt.Fprintf(env.Stderr, "oncemq: %v\n", damage)
		}
		return cli.ExitFailure
	}
	listening := func(bool) {}
	if adm != nil {
		adm.SetServer(srv)
		listening = adm.SetListening
	}
	stopReloads := reloadOnSignal(hup, reloaders, log)
	defer stopReloads()
	// Ready from here: the listeners are bound and about to be served, so what reads the
	// start-up line finds /readyz ready.
	listening(true)
	log.Info("oncemq started", startedAttrs(env.Version, cfg, lns)...)
	return serveUntilSignal(srv, lns, sigs, log, listening)
}

// reloadOnSignal runs the reloaders at every SIGHUP, on a goroutine of its own, until the returned
// function is called. Connections stay: the new files apply to what follows.
func reloadOnSignal(hup <-chan os.Signal, reloaders []reloader, log *slog.Logger) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-hup:
				reload(reloaders, log)
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// startedAttrs are the attributes of the start-up log line: listen is the first TCP listener's
// address (tests read the port bound with port 0 from it), listeners every listener's URL.
func startedAttrs(version string, cfg config, lns []listener) []any {
	attrs := []any{"version", version}
	urls := make([]string, len(lns))
	for i, l := range lns {
		urls[i] = l.url()
	}
	for _, l := range lns {
		if l.scheme == "mqtt" {
			attrs = append(attrs, "listen", l.Addr().String())
			break
		}
	}
	return append(attrs, "listeners", strings.Join(urls, " "), "data", cfg.DataDir, "sync", cfg.Sync,
		"max_queued", cfg.MaxQueued, "dedup_window", cfg.DedupWindow, "dedup_max", cfg.DedupMax)
}

// newServer loads the certificates, the users and the access rules, opens the store and binds the
// listeners: the one place that knows how package mqtt is configured. The reloaders are what
// SIGHUP runs.
func newServer(cfg config, version string, log *slog.Logger, adm *admin.Admin) (*mqtt.Server, []listener, []reloader, error) {
	certs, err := newCertStore(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	sec, err := newSecurity(cfg, cfg.allListeners(), cfg.TLSClientCA != "", log)
	if err != nil {
		return nil, nil, nil, err
	}
	reloaders := sec.reloaders
	if certs != nil {
		reloaders = append(reloaders, reloader{"certificates", certs.reload})
	}
	opts := mqtt.Options{
		DataDir:       cfg.DataDir,
		NoSync:        cfg.Sync == "none",
		MaxQueued:     cfg.MaxQueued,
		Logger:        log,
		Authenticator: sec.authenticator,
		Authorizer:    sec.authorizer,
		SysInterval:   offIfZero(cfg.SysInterval),
		Version:       version,

		ResponseTopicPrefix: cfg.ResponseTopicPrefix,
		DedupProperty:       cfg.DedupProperty,
		DedupScope:          cfg.DedupScope,
		DedupJSONField:      cfg.DedupJSONField,
		DedupWindow:         offIfZero(cfg.DedupWindow),
		DedupMax:            offIfZero(cfg.DedupMax),
	}
	cfg.Limits.apply(&opts)
	if adm != nil {
		opts.OnCommit = adm.OnCommit
	}
	srv, err := mqtt.New(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	lns, err := openListeners(cfg, certs)
	if err != nil {
		srv.Close()
		return nil, nil, nil, err
	}
	return srv, lns, reloaders, nil
}

// offIfZero maps serve's 0 ("off") to mqtt.Options' negative ("off"; there 0 means the default).
func offIfZero[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// serveUntilSignal serves every listener until a signal comes, or a Serve fails, then shuts the
// broker down and returns the exit code. listening is told when the first of them stops.
func serveUntilSignal(srv *mqtt.Server, lns []listener, sigs <-chan os.Signal, log *slog.Logger, listening func(bool)) int {
	served := make(chan error, len(lns))
	var stopped sync.Once
	for _, l := range lns {
		go func() {
			err := srv.Serve(l)
			stopped.Do(func() { listening(false) })
			served <- err
		}()
	}

	code, returned := cli.ExitOK, 0
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String(), "timeout", shutdownTimeout)
	case err := <-served:
		if errors.Is(err, mqtt.ErrStoreFailed) {
			// Nothing written since the last good sync can be trusted: no shutdown, which would
			// wait for clients and commits; exit now, so that a supervisor restarts the broker
			// and its recovery reads what is on the disk.
			log.Error("exiting: the store failed", "err", err)
			return cli.ExitFailure
		}
		// Serve returns only after Shutdown, so this is a failure; still close the store cleanly.
		log.Error("serve stopped", "err", err)
		code, returned = cli.ExitFailure, 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if !shutdown(ctx, srv, sigs, log) {
		return cli.ExitFailure
	}
	for ; returned < len(lns); returned++ {
		select {
		case err := <-served:
			if !errors.Is(err, mqtt.ErrServerClosed) {
				log.Error("serve", "err", err)
				code = cli.ExitFailure
			}
		case <-ctx.Done():
			log.Error("serve did not return after shutdown")
			return cli.ExitFailure
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
