package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// errorTap is told the status and error code of every error a route's
// handler answers (nil in the daemon: nothing is tapped). The supervisor's
// tests set it to check each route's Errors against what its handler really
// returns (errorcodes_test.go): Route.Errors is written by hand, and this is
// what keeps it honest. Codes the shared middleware writes before the
// handler runs (token, body cap, forwarding, guards) are not tapped: they
// are listed by sharedErrors from the route's kind.
type errorTap func(rt Route, status int, code string)

// ErrorTapDirEnv names a folder into which a daemon writes every error a
// handler answers that its route does not list (undeclaredTap). The e2e
// harness sets it for every daemon it starts and fails the run on any
// line: the end-to-end flows (dead workers, lost leaders, real browsers)
// reach errors the supervisor's own tests cannot. Tests only.
const ErrorTapDirEnv = "SVCD_ERROR_TAP_DIR"

// declared: rt lists (status, code), in Route.Errors or the errors its
// kind implies (sharedErrors). An answer without the JSON envelope's code
// is never declared.
func declared(rt Route, status int, code string) bool {
	return code != "" && slices.Contains(sharedErrors(rt).Add(rt.Errors)[status], code)
}

// undeclaredTap appends each undeclared error to <dir>/<pid>.log, one line
// each: "name METHOD path status code".
func undeclaredTap(dir string) errorTap {
	var mu sync.Mutex
	path := filepath.Join(dir, fmt.Sprintf("%d.log", os.Getpid()))
	return func(rt Route, status int, code string) {
		if declared(rt, status, code) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "%s %s %s %d %q\n", rt.Name, rt.Method, rt.Path, status, code)
	}
}

// tapErrors wraps w so that, when the handler is done, an answer of 400 or
// more is reported with the code read from its JSON error envelope ("" if
// the body was not one). Call done after the handler returned.
func tapErrors(w http.ResponseWriter, rt Route, tap errorTap) (_ http.ResponseWriter, done func()) {
	tw := &tapWriter{ResponseWriter: w}
	return tw, func() {
		if tw.status < 400 {
			return
		}
		var env struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(tw.body, &env)
		tap(rt, tw.status, env.Error.Code)
	}
}

type tapWriter struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (w *tapWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *tapWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 400 && len(w.body) < 64<<10 {
		w.body = append(w.body, b...)
	}
	return w.ResponseWriter.Write(b)
}

func (w *tapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *tapWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *tapWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
