package supervisor

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The handler chain keeps every header, answer and metric series it had
// when each middleware wrapped the writer on its own.
func TestHandlerChainHeadersAnswersAndMetrics(t *testing.T) {
	_, hs := newTestServer(t)
	do := func(method, path, reqID string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, nil)
		if reqID != "" {
			req.Header.Set(RequestIDHeader, reqID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	hexID := regexp.MustCompile(`^[0-9a-f]{16}$`)
	r1, _ := do("GET", "/v1/system/state", "")
	r2, _ := do("GET", "/v1/system/state", "")
	id1, id2 := r1.Header.Get(RequestIDHeader), r2.Header.Get(RequestIDHeader)
	if !hexID.MatchString(id1) || !hexID.MatchString(id2) || id1 == id2 {
		t.Fatalf("generated request ids %q %q", id1, id2)
	}
	if r1.Header.Get(StateIndexHeader) == "" || r1.Header.Get("X-Svcd-Served-By") == "" {
		t.Fatalf("headers %v", r1.Header)
	}
	if r, _ := do("GET", "/v1/system/state", "caller-id-1"); r.Header.Get(RequestIDHeader) != "caller-id-1" {
		t.Fatalf("caller's request id not echoed: %q", r.Header.Get(RequestIDHeader))
	}
	if r, body := do("GET", "/v1/no/such/route", ""); r.StatusCode != 404 || !strings.Contains(body, `"route_not_found"`) || r.Header.Get(RequestIDHeader) == "" || r.Header.Get(StateIndexHeader) != "" {
		t.Fatalf("404: %d %s %v", r.StatusCode, body, r.Header)
	}
	if r, body := do("DELETE", "/v1/system/state", ""); r.StatusCode != 405 || !strings.Contains(body, `"method_not_allowed"`) {
		t.Fatalf("405: %d %s", r.StatusCode, body)
	}
	// Near misses of static and variable templates keep mux's answers.
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/v1/system/state/", 404}, {"GET", "/v1/system/State", 404}, {"POST", "/v1/tasks/t1", 405},
		{"GET", "/v1/tasks/no-such-task", 404}, {"DELETE", "/v1/tasks/t1/logs", 405}, {"GET", "/v1/tasks/t1/logs/x", 404},
	} {
		if r, body := do(c.method, c.path, ""); r.StatusCode != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.StatusCode, body, c.code)
		}
	}
	_, metrics := do("GET", "/metrics", "")
	for _, want := range []string{
		`svcd_http_requests_total{code="200",route="GET /v1/system/state"} 3`,
		`svcd_http_requests_total{code="404",route="unmatched"} 4`,
		`svcd_http_requests_total{code="405",route="unmatched"} 3`,
		`svcd_http_request_duration_seconds_count{route="GET /v1/system/state"} 3`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
