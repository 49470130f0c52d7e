package supervisor

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkExecFront: what the daemon's HTTP side of POST /v1/exec costs,
// one request at a time as P3 sends them (P4 runs 8 callers, which keeps
// every thread awake; here each request wakes the server from idle). The
// exec is refused by validation (blank command), so no worker is involved.
// Baseline: a bare net/http handler over the same loopback HTTP. The
// in_process_* cases call the handler without any network, showing how
// much of the figure is the daemon's own work.
func BenchmarkExecFront(b *testing.B) {
	s, hs := newTestServer(b)
	bare := bareServer(b, []byte(`{"ok":false}`))
	client := benchClient()
	const blank = `{"command":"  "}`
	post := func(url string, want int) func(b *testing.B) {
		return func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest("POST", url, strings.NewReader(blank))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer unit-test-token")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					b.Fatalf("POST %s: %d, want %d", url, resp.StatusCode, want)
				}
			}
		}
	}
	h := s.Handler()
	inProcess := func(method, path, body string, want int) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer unit-test-token")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					b.Fatalf("%s %s: %d, want %d: %s", method, path, rec.Code, want, rec.Body)
				}
			}
		}
	}
	b.Run("baseline_bare_http", post(bare.URL+"/v1/exec", http.StatusOK))
	b.Run("exec_refused_http", post(hs.URL+"/v1/exec", http.StatusUnprocessableEntity))
	b.Run("in_process_exec_refused", inProcess("POST", "/v1/exec", blank, http.StatusUnprocessableEntity))
	b.Run("in_process_state_get", inProcess("GET", "/v1/system/state", "", http.StatusOK))
}
