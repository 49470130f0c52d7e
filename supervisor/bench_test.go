package supervisor

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/svcd/svcd/shared/api"
)

// The benchmarks compare the real routes, over real loopback HTTP, with a
// bare net/http handler writing the same bytes on the same kind of server in
// the same run. scripts/bench prints the ratios.

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
}

// bareServer answers every request with body, as cheaply as net/http allows.
func bareServer(b *testing.B, body []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchRequests(b *testing.B, client *http.Client, method, url, body string) {
	b.Helper()
	call := benchCall(b, client, method, url, body)
	for i := 0; i < b.N; i++ {
		call()
	}
}

func stateBody(b *testing.B, s *Server) []byte {
	body, err := json.Marshal(api.Envelope{OK: true, Data: s.SystemState()})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func BenchmarkGetSystemState(b *testing.B) {
	s, hs := newTestServer(b)
	bare := bareServer(b, stateBody(b, s))
	client := benchClient()
	b.Run("baseline", func(b *testing.B) { benchRequests(b, client, "GET", bare.URL+"/v1/system/state", "") })
	b.Run("daemon", func(b *testing.B) { benchRequests(b, client, "GET", hs.URL+"/v1/system/state", "") })
}

// BenchmarkPauseSystem: each daemon request is a raft commit (fsync'd by
// raft-boltdb) before the answer.
func BenchmarkPauseSystem(b *testing.B) {
	s, hs := newTestServer(b)
	bare := bareServer(b, stateBody(b, s))
	client := benchClient()
	body := `{"requested_by":"bench","reason":"bench"}`
	b.Run("baseline", func(b *testing.B) { benchRequests(b, client, "POST", bare.URL+"/v1/system/pause", body) })
	b.Run("daemon_raft_commit", func(b *testing.B) { benchRequests(b, client, "POST", hs.URL+"/v1/system/pause", body) })
}
