package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/admin"
)

// newLogger is the process's logger, in the format --log-format asks for. Everything serve logs,
// start-up errors included, goes through it.
func newLogger(w io.Writer, cfg config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// startAdmin builds the admin endpoints and serves them on --http-listen, before the store is
// recovered: /healthz answers and /readyz says "recovering" during a long recovery. It returns nil
// and a no-op stop when --http-listen is not set. The listener is refused when it would expose the
// profiler to the network without a token.
func startAdmin(cfg config, log *slog.Logger) (adm *admin.Admin, stop func(), err error) {
	stop = func() {}
	if cfg.HTTPListen == "" {
		return nil, stop, nil
	}
	var token string
	if cfg.AdminTokenFile != "" {
		if token, err = admin.ReadToken(cfg.AdminTokenFile); err != nil {
			return nil, stop, err
		}
	}
	if err := admin.CheckExposure(cfg.HTTPListen, token != "", cfg.Pprof); err != nil {
		return nil, stop, err
	}
	ln, err := net.Listen("tcp", cfg.HTTPListen)
	if err != nil {
		return nil, stop, fmt.Errorf("admin listener on %s: %w", cfg.HTTPListen, err)
	}
	adm = admin.New(admin.Config{Token: token, Pprof: cfg.Pprof, Logger: log})
	hs := &http.Server{Handler: adm.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener stopped", "err", err)
		}
	}()
	log.Info("admin listener started", "http_listen", ln.Addr().String(), "admin_api", token != "", "pprof", cfg.Pprof)
	return adm, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}
