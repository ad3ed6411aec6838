// Package admin is oncemq's HTTP admin listener (serve --http-listen): Prometheus metrics, health
// and readiness probes, and, behind a bearer token, the sessions API, the online backup and the
// profiler.
//
// It lives under cmd/oncemq rather than in package mqtt because what it adds to the embedding API
// is an HTTP surface with its own choices (paths, JSON, token file, Prometheus): a program that
// embeds the broker has what it is built from in package mqtt (Stats, Sessions, DeleteSession,
// Backup, StoreErr, Options.OnCommit) and serves them its own way.
package admin

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/oncemq/oncemq/mqtt"
)

// Config is what serve's flags say about the admin listener.
type Config struct {
	// Token is the bearer token of the admin API; "" serves only /metrics, /healthz and /readyz
	// (and /debug/pprof/ when Pprof is set: serve allows that on loopback only).
	Token string
	// Pprof adds /debug/pprof/, behind the token when there is one.
	Pprof  bool
	Logger *slog.Logger
}

// Admin serves the admin endpoints of one broker. It is built before the broker's store is
// recovered, so that /healthz answers and /readyz says "recovering" during a long recovery;
// SetServer hands it the broker once mqtt.New returned.
type Admin struct {
	cfg       Config
	metrics   *metrics
	srv       atomic.Pointer[mqtt.Server]
	listening atomic.Bool // the broker's MQTT listener is being served
}

// New builds the admin endpoints.
func New(cfg Config) *Admin {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Admin{cfg: cfg}
	a.metrics = newMetrics(a.server)
	return a
}

// OnCommit is the broker's mqtt.Options.OnCommit: it feeds the commit histograms.
func (a *Admin) OnCommit(records int, took time.Duration) { a.metrics.observeCommit(records, took) }

// SetServer hands over the broker, once its store is recovered.
func (a *Admin) SetServer(srv *mqtt.Server) { a.srv.Store(srv) }

// SetListening says whether the broker's MQTT listener is being served.
func (a *Admin) SetListening(on bool) { a.listening.Store(on) }

// server is the broker; nil while its store is being recovered.
func (a *Admin) server() *mqtt.Server { return a.srv.Load() }

// Handler routes every endpoint.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.handler())
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("GET /readyz", a.readyz)
	if a.cfg.Token != "" {
		mux.Handle("GET /admin/sessions", a.guard(a.listSessions))
		mux.Handle("GET /admin/sessions/{id...}", a.guard(a.showSession))
		mux.Handle("DELETE /admin/sessions/{id...}", a.guard(a.deleteSession))
		mux.Handle("GET /admin/backup", a.guard(a.backup))
	}
	if a.cfg.Pprof {
		mux.Handle("/debug/pprof/", a.guard(pprof.Index))
		mux.Handle("/debug/pprof/cmdline", a.guard(pprof.Cmdline))
		mux.Handle("/debug/pprof/profile", a.guard(pprof.Profile))
		mux.Handle("/debug/pprof/symbol", a.guard(pprof.Symbol))
		mux.Handle("/debug/pprof/trace", a.guard(pprof.Trace))
	}
	return mux
}

// healthz answers 200 while the process serves HTTP at all: a liveness probe.
func (a *Admin) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 "ready" when the broker can take work, 503 with the reason otherwise.
func (a *Admin) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := a.readiness(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}
