package harness

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/api/apitest"
)

// TestDoRetriesReadsNotYetCurrent: Do sends a GET of the API answered 503
// catching_up or starting again, as docs/ha.md tells a client to, and
// returns the current answer; DoOnce, a write, a 503 that is the answer
// (no_leader) and /readyz are not retried.
func TestDoRetriesReadsNotYetCurrent(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, code string
		want                     int
		calls                    int64
		once                     bool
	}{
		{"catching_up read", "GET", "/v1/system/state", "catching_up", 200, 3, false},
		{"starting read", "GET", "/v1/status", "starting", 200, 3, false},
		{"DoOnce sees the 503", "GET", "/v1/system/state", "catching_up", 503, 1, true},
		{"a write is never repeated", "POST", "/v1/system/pause", "catching_up", 503, 1, false},
		{"no_leader is the answer", "GET", "/v1/system/state", "no_leader", 503, 1, false},
		{"readyz's 503 is the answer", "GET", "/readyz", "catching_up", 503, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(apitest.NotCurrentFor(2, tc.code, 60, &calls, `{"ok":true,"data":{}}`))
			defer srv.Close()
			do := Do
			if tc.once {
				do = DoOnce
			}
			if r := do(t, tc.method, srv.URL+tc.path, nil); r.Status != tc.want || calls.Load() != tc.calls {
				t.Fatalf("%s %s: status %d after %d calls, want %d after %d", tc.method, tc.path, r.Status, calls.Load(), tc.want, tc.calls)
			}
		})
	}
}

// TestDoGivesUpOnAReadNeverCurrent: a node that never catches up is a
// finding: Do stops retrying within its bound and returns the 503.
func TestDoGivesUpOnAReadNeverCurrent(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(apitest.NotCurrentFor(1<<62, "catching_up", 60, &calls, `{"ok":true,"data":{}}`))
	defer srv.Close()
	const within = 500 * time.Millisecond
	if r := doRetrying(t, within, "GET", srv.URL+"/v1/system/state", nil); r.Status != 503 {
		t.Fatalf("status %d, want the last 503", r.Status)
	}
	// 60 ms apart: a few calls, and none once the bound has passed.
	if n := calls.Load(); n < 2 || n > int64(within/(60*time.Millisecond))+1 {
		t.Fatalf("%d calls", n)
	}
}
