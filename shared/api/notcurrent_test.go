package api

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNotCurrentYet(t *testing.T) {
	h := http.Header{"Retry-After": {"1"}}
	for _, tc := range []struct {
		name, method, path, body string
		header                   http.Header
		wait                     time.Duration
		again                    bool
	}{
		{"catching_up read", "GET", "/v1/system/state", `{"error":{"code":"catching_up","details":{"retry_after_ms":200}}}`, h, 200 * time.Millisecond, true},
		{"starting, Retry-After only", "GET", "/v1/status", `{"error":{"code":"starting"}}`, h, time.Second, true},
		{"a write", "POST", "/v1/system/pause", `{"error":{"code":"catching_up"}}`, h, 0, false},
		{"no_leader is the answer", "GET", "/v1/system/state", `{"error":{"code":"no_leader"}}`, h, 0, false},
		{"readyz is the answer", "GET", "/readyz", `{"error":{"code":"catching_up"}}`, h, 0, false},
		{"no Retry-After", "GET", "/v1/status", `{"error":{"code":"starting"}}`, http.Header{}, 0, false},
		{"a wait held to a second", "GET", "/v1/status", `{"error":{"code":"starting","details":{"retry_after_ms":90000}}}`, h, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, _, again := NotCurrentYet(tc.method, tc.path, http.StatusServiceUnavailable, tc.header, []byte(tc.body))
			if again != tc.again || wait != tc.wait {
				t.Fatalf("again %v wait %s, want %v %s", again, wait, tc.again, tc.wait)
			}
		})
	}
}

func FuzzNotCurrentYet(f *testing.F) {
	f.Add("GET", "/v1/system/state", 503, "1", `{"ok":false,"error":{"code":"catching_up","details":{"retry_after_ms":1000}}}`)
	f.Add("GET", "/v1/status", 503, "1", `{"ok":false,"error":{"code":"starting"}}`)
	f.Add("POST", "/v1/system/pause", 503, "1", `{"ok":false,"error":{"code":"catching_up"}}`)
	f.Add("GET", "/v1/system/state", 503, "", `{"ok":false,"error":{"code":"no_leader"}}`)
	f.Add("GET", "/readyz", 503, "99999999999999999999", `{"error":{"code":"catching_up","details":{"retry_after_ms":-5}}}`)
	f.Fuzz(func(t *testing.T, method, path string, status int, retryAfter, body string) {
		header := http.Header{}
		if retryAfter != "" {
			header.Set("Retry-After", retryAfter)
		}
		wait, code, again := NotCurrentYet(method, path, status, header, []byte(body))
		if !again {
			return
		}
		if method != http.MethodGet || status != 503 || header.Get("Retry-After") == "" || !strings.HasPrefix(path, "/v1/") || (code != "catching_up" && code != "starting") {
			t.Fatalf("asks again for %s %s %d %q: %s", method, path, status, retryAfter, body)
		}
		if wait < 50*time.Millisecond || wait > time.Second {
			t.Fatalf("waits %s", wait)
		}
	})
}
