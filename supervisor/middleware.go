package supervisor

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/svcd/svcd/shared/api"
)

// RequestIDHeader carries the id of each request, echoed from the caller or
// generated, and written into every log line about the request.
const RequestIDHeader = "X-Request-Id"

// statusRecorder remembers the status a handler wrote, for logs and metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and Hijack (SSE, WebSocket).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack hands the connection over (WebSocket upgrades) and records 101, so
// logs and metrics show the upgrade rather than a 200 nobody sent.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil && !s.wrote {
		s.status, s.wrote = http.StatusSwitchingProtocols, true
	}
	return conn, rw, err
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// withRequestID echoes or assigns X-Request-Id.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if id == "" || len(id) > 128 {
			id = newRequestID()
			r.Header.Set(RequestIDHeader, id)
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r)
	})
}

// withRecovery turns a handler panic into a 500 JSON error and a log line,
// so one bad request never takes the listener down.
func (s *Server) withRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panic", "path", r.URL.Path, "request_id", r.Header.Get(RequestIDHeader), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !rec.wrote {
					api.WriteError(rec, api.NewError(http.StatusInternalServerError, "internal_error", "the request failed inside the daemon; see the log for request id %s", r.Header.Get(RequestIDHeader)))
				}
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// withAccessLog logs each request at debug level (never headers or bodies:
// they may carry tokens).
func (s *Server) withAccessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration_ms", time.Since(start).Milliseconds(), "request_id", r.Header.Get(RequestIDHeader))
	})
}

// requireToken checks Authorization: Bearer <token> in constant time before
// the route's handler (and so before its body) is touched.
func (s *Server) requireToken(r *http.Request) error {
	values := r.Header.Values("Authorization")
	if len(values) > 1 {
		// First-wins would let a proxy's header and a caller's disagree about
		// who is asking; refuse rather than pick one.
		return api.BadRequest("duplicate_authorization", "more than one Authorization header; send exactly one")
	}
	auth := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if auth == "" {
		return api.Unauthorized("missing Authorization: Bearer <SVC_SHARED_TOKEN> header")
	}
	if len(auth) < len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return api.Unauthorized("Authorization header must use the Bearer scheme")
	}
	given := []byte(strings.TrimSpace(auth[len(prefix):]))
	if subtle.ConstantTimeCompare(given, []byte(s.token)) != 1 {
		return api.Unauthorized("wrong bearer token")
	}
	return nil
}
