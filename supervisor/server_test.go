package supervisor

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/supervisor/config"
)

// newTestServer starts a real supervisor (raft in a temp dir) behind a real
// loopback HTTP server.
func newTestServer(t testing.TB) (*Server, *httptest.Server) {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.SharedToken = "unit-test-token"
	s, err := New(context.Background(), cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	if _, bench := t.(*testing.B); !bench {
		s.errTap = seenErrors.record // errorcodes_test.go; benchmarks measure the daemon as it runs
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return s, hs
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post sends the test server's token: every state-changing route needs it
// at the default require_token level ("writes").
func post(t testing.TB, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer unit-test-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
