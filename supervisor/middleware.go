package supervisor

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/guard"
	"github.com/svcd/svcd/shared/reqid"
)

// RequestIDHeader carries the id of each request, echoed from the caller
// when reqid.Valid or generated, and written into every log line about the
// request (reqid.Logger) and the workers' lines for its calls.
const RequestIDHeader = reqid.Header

// responseWriter is the one wrapper every answer goes through. The front
// door makes it; the access log, the metrics and the recovery all read the
// status it recorded, and a route sets index to have StateIndexHeader
// stamped (stateindex.go). One wrapper per request instead of one per
// middleware: the chain is on every request's path.
type responseWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	start  time.Time
	index  func() uint64 // nil: no state index on this answer
}

// responseWriterOf returns the front door's writer under w, or wraps w in a
// new one when a handler runs without the front door (tests, the router
// alone).
func responseWriterOf(w http.ResponseWriter) *responseWriter {
	if rw, ok := w.(*responseWriter); ok {
		return rw
	}
	return &responseWriter{ResponseWriter: w, status: http.StatusOK, start: time.Now()}
}

func (w *responseWriter) record(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
}

func (w *responseWriter) WriteHeader(code int) {
	w.stampIndex()
	w.record(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.stampIndex()
	w.record(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach deadlines and the rest.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush keeps streaming answers streaming, with the index stamped first.
func (w *responseWriter) Flush() {
	w.stampIndex()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over (WebSocket upgrades) and records 101, so
// logs and metrics show the upgrade rather than a 200 nobody sent.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.record(http.StatusSwitchingProtocols)
	}
	return conn, rw, err
}

// frontDoor is the outermost layer of every request, in this order: echo or
// assign X-Request-Id, turn a handler panic into a 500 JSON error and a log
// line (one bad request never takes the listener down), and log the request
// at debug level (never headers or bodies: they may carry tokens).
func (s *Server) frontDoor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A caller's id is taken only when reqid.Valid: anything else (a
		// newline, quotes, 10 KB) is replaced, never echoed or logged.
		given := r.Header.Get(RequestIDHeader)
		if given == "" {
			// A call the daemon makes to itself (an instruction batch's
			// routes) keeps the id of the request that made it.
			given = reqid.From(r.Context())
		}
		id := reqid.Accept(given)
		if id != given {
			r.Header[RequestIDHeader] = []string{id}
		}
		w.Header()[RequestIDHeader] = []string{id}
		r = r.WithContext(reqid.With(r.Context(), id))
		rw := &responseWriter{ResponseWriter: w, status: http.StatusOK, start: time.Now()}
		defer s.recoverPanic(rw, r)
		next.ServeHTTP(rw, r)
		if s.log.IsDebug() {
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rw.status,
				"duration_ms", time.Since(rw.start).Milliseconds(), "request_id", id)
		}
	})
}

// recoverPanic answers a handler panic with a 500 JSON error when nothing
// was written yet. http.ErrAbortHandler keeps its meaning (abort quietly).
func (s *Server) recoverPanic(rw *responseWriter, r *http.Request) {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
	id := r.Header.Get(RequestIDHeader)
	s.log.Error("handler panic", "path", r.URL.Path, "request_id", id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	if !rw.wrote {
		rw.index = nil // the failed handler's state is not what this answer shows
		api.WriteError(rw, api.NewError(http.StatusInternalServerError, "internal_error", "the request failed inside the daemon; see the log for request id %s", id))
	}
}

// requireToken checks Authorization: Bearer <token> in constant time before
// the route's handler (and so before its body) is touched.
func (s *Server) requireToken(r *http.Request) error { return guard.Bearer(r, s.token) }
