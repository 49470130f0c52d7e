package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/svcd/svcd/shared/api/apitest"
)

// svcctl is the client docs/ha.md describes: a read answered 503
// catching_up or starting is asked again and the current answer printed;
// a write, and a 503 that is the answer (no_leader), are not repeated.
func TestReadsAskedAgainWhileNotCurrent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		code  string
		exit  int
		calls int64
	}{
		{"catching_up read", []string{"system", "state"}, "catching_up", 0, 3},
		{"starting read", []string{"system", "state"}, "starting", 0, 3},
		{"no_leader is the answer", []string{"system", "state"}, "no_leader", 1, 1},
		{"a write is not repeated", []string{"system", "pause", "-reason", "x"}, "catching_up", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(apitest.NotCurrentFor(2, tc.code, 50, &calls, `{"ok":true,"data":{"mode":"running","version":7}}`))
			defer srv.Close()
			var out, errOut bytes.Buffer
			env := func(k string) string {
				if k == "SVC_SHARED_TOKEN" {
					return "t0ken"
				}
				return ""
			}
			code := run(append([]string{"-addr", srv.URL, "-format=json"}, tc.args...), &out, &errOut, env)
			if code != tc.exit || calls.Load() != tc.calls {
				t.Fatalf("exit %d after %d calls, want %d after %d\n%s%s", code, calls.Load(), tc.exit, tc.calls, out.String(), errOut.String())
			}
			if tc.exit == 0 && (!strings.Contains(out.String(), `"version": 7`) || !strings.Contains(errOut.String(), "asking again")) {
				t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
			}
		})
	}
}
