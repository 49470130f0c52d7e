// Package apitest is test support for clients of the API: servers that
// answer the way a node does, for the clients' own tests (svcctl, the e2e
// harness).
package apitest

import (
	"net/http"
	"strconv"
	"sync/atomic"
)

// NotCurrentFor answers its first n requests 503 with error code, a
// Retry-After of 1 s and details.retry_after_ms, as a node that cannot
// prove a read current yet does (api.NotCurrentYet's codes), then 200 with
// the JSON body then. It counts every request in calls.
func NotCurrentFor(n int64, code string, retryAfterMs int, calls *atomic.Int64, then string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) <= n {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"ok":false,"error":{"code":"` + code + `","message":"not yet","details":{"retry_after_ms":` + strconv.Itoa(retryAfterMs) + `}}}`))
			return
		}
		_, _ = w.Write([]byte(then))
	})
}
