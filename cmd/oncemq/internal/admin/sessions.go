package admin

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/oncemq/oncemq/mqtt"
)

// listSessions answers GET /admin/sessions: every session, as JSON.
func (a *Admin) listSessions(w http.ResponseWriter, _ *http.Request) {
	srv := a.available(w)
	if srv == nil {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": srv.Sessions()})
}

// showSession answers GET /admin/sessions/{id}.
func (a *Admin) showSession(w http.ResponseWriter, r *http.Request) {
	srv := a.available(w)
	if srv == nil {
		return
	}
	info, ok := srv.Session(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// deleteSession answers DELETE /admin/sessions/{id}: 204 once the removal is committed.
func (a *Admin) deleteSession(w http.ResponseWriter, r *http.Request) {
	srv := a.available(w)
	if srv == nil {
		return
	}
	id := r.PathValue("id")
	err := srv.DeleteSession(r.Context(), id)
	switch {
	case errors.Is(err, mqtt.ErrNoSession):
		http.Error(w, "no such session", http.StatusNotFound)
	case err != nil:
		a.cfg.Logger.Error("admin: delete session", slog.String("client", id), slog.Any("err", err))
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// backup answers GET /admin/backup with a consistent copy of the store. A failure after the copy
// started aborts the response, so that the client sees a truncated body as an error rather than
// a short file.
func (a *Admin) backup(w http.ResponseWriter, _ *http.Request) {
	srv := a.available(w)
	if srv == nil {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+mqtt.DataFile+`"`)
	n, err := srv.Backup(w)
	if err != nil {
		a.cfg.Logger.Error("admin: backup failed", slog.Int64("bytes_sent", n), slog.Any("err", err))
		panic(http.ErrAbortHandler)
	}
	a.cfg.Logger.Info("admin: backup sent", slog.Int64("bytes", n))
}

// available is the broker, or nil after answering 503 while the store is being recovered.
func (a *Admin) available(w http.ResponseWriter) *mqtt.Server {
	srv := a.server()
	if srv == nil {
		http.Error(w, "recovering the store", http.StatusServiceUnavailable)
	}
	return srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
