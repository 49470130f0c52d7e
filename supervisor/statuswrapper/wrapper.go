// Package statuswrapper is the optional read-only status wrapper (svcd
// status-wrapper, default 127.0.0.1:4318). It reads the daemon's
// GET /v1/system/state (and, for the daemon's own sections, its
// GET /v1/status) and renders with the daemon's own status package.
package statuswrapper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/guard"
	"github.com/svcd/svcd/shared/systemstate"
	"github.com/svcd/svcd/supervisor/status"
)

// Wrapper serves the status views of one daemon.
type Wrapper struct {
	guard     *guard.Policy
	daemonURL string
	token     string // the daemon's shared token, sent when set (require_token = "all")
	client    *http.Client
	log       hclog.Logger
}

// New returns a wrapper reading from daemonURL (e.g. http://127.0.0.1:4317),
// guarded by g: the same Host allow-list and write guard as the daemon's
// listener (built from the wrapper's own listen address). token, when not
// empty, is sent to the daemon: one with require_token = "all" answers its
// state only to the token, while the wrapper serves its read-only views to
// anyone its guards let in.
func New(daemonURL, token string, g *guard.Policy, log hclog.Logger) *Wrapper {
	return &Wrapper{
		guard:     g,
		token:     token,
		daemonURL: strings.TrimRight(daemonURL, "/"),
		client:    &http.Client{Timeout: 3 * time.Second},
		log:       log,
	}
}

// Handler is the wrapper's routes (/describe, /healthz, /v1/status,
// /v1/status/ui and the panel aliases / and /ui) behind the Host and write
// guards.
func (wr *Wrapper) Handler() http.Handler {
	return wr.guard.Hosts(wr.guard.Writes(wr.routes()))
}

func (wr *Wrapper) routes() http.Handler {
	r := mux.NewRouter()
	panel := func(w http.ResponseWriter, req *http.Request) { status.WritePanel(w, wr.snapshot(req.Context())) }
	r.HandleFunc("/describe", wr.describe).Methods(http.MethodGet)
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	}).Methods(http.MethodGet)
	r.HandleFunc("/v1/status", func(w http.ResponseWriter, req *http.Request) { status.WriteJSON(w, wr.snapshot(req.Context())) }).Methods(http.MethodGet)
	r.HandleFunc("/v1/status/ui", panel).Methods(http.MethodGet)
	r.HandleFunc("/ui", panel).Methods(http.MethodGet)
	r.HandleFunc("/", panel).Methods(http.MethodGet)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		api.WriteError(w, api.NotFound("route_not_found", "no route %s %s on the status wrapper; GET /describe lists them", req.Method, req.URL.Path))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		api.WriteError(w, api.NewError(http.StatusMethodNotAllowed, "method_not_allowed", "the status wrapper is read-only: %s is not allowed on %s", req.Method, req.URL.Path))
	})
	return r
}

func (wr *Wrapper) describe(w http.ResponseWriter, _ *http.Request) {
	api.WriteOK(w, map[string]any{
		"name":        "svcd-status-wrapper",
		"surface":     "status",
		"description": "Optional read-only status wrapper. It reads the daemon's GET /v1/system/state (and GET /v1/status for the daemon's own sections) and renders the same status panel as the daemon's, without its controls.",
		"daemon_url":  wr.daemonURL,
		"routes": []map[string]string{
			{"method": "GET", "path": "/describe", "summary": "this document"},
			{"method": "GET", "path": "/healthz", "summary": "liveness of the wrapper itself; body ok"},
			{"method": "GET", "path": "/v1/status", "summary": "narrow JSON status; 503 when the daemon is down"},
			{"method": "GET", "path": "/v1/status/ui", "summary": "HTML status panel"},
			{"method": "GET", "path": "/ui", "summary": "alias of /v1/status/ui"},
			{"method": "GET", "path": "/", "summary": "alias of /v1/status/ui"},
		},
	})
}

func (wr *Wrapper) snapshot(ctx context.Context) status.Snapshot {
	var st systemstate.State
	err := wr.fetch(ctx, "/v1/system/state", &st)
	if err != nil {
		wr.log.Warn("daemon not readable", "daemon_url", wr.daemonURL, "error", err)
		return status.Assemble(status.Input{Err: err, Source: wr.daemonURL, Now: time.Now()})
	}
	in := status.Input{System: &st, Source: wr.daemonURL, Now: time.Now()}
	// The System block comes from /v1/system/state (SPEC.md); the daemon's
	// own sections (version, workers, sandbox, browsers, cluster, …) from its
	// /v1/status, so the panel is the daemon's own. A daemon that does not
	// answer it still gets its System block.
	var own status.Snapshot
	if err := wr.fetch(ctx, "/v1/status", &own); err != nil {
		wr.log.Debug("daemon status sections not readable; showing the system state only", "daemon_url", wr.daemonURL, "error", err)
		return status.Assemble(in)
	}
	in.Version, in.Sandbox, in.SandboxLevel = own.Version, own.Sandbox, own.SandboxLevel
	if own.StartedAt != nil {
		in.StartedAt = *own.StartedAt
	}
	in.Browser, in.Workers, in.Cluster, in.Convs, in.Tasks = own.Browser, own.Workers, own.Cluster, own.Convs, own.Tasks
	return status.Assemble(in)
}

// fetch reads one of the daemon's GET routes through its envelope into v.
func (wr *Wrapper) fetch(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, wr.daemonURL+path, nil)
	if err != nil {
		return err
	}
	if wr.token != "" {
		req.Header.Set("Authorization", "Bearer "+wr.token)
	}
	resp, err := wr.client.Do(req)
	if err != nil {
		return fmt.Errorf("daemon at %s is down or unreachable: %w", wr.daemonURL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("daemon at %s answered %s for %s", wr.daemonURL, resp.Status, path)
	}
	env := struct {
		OK   bool `json:"ok"`
		Data any  `json:"data"`
	}{Data: v}
	if err := json.Unmarshal(body, &env); err != nil || !env.OK {
		return fmt.Errorf("daemon at %s sent an unreadable answer for %s", wr.daemonURL, path)
	}
	return nil
}

func unwrapURLError(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
