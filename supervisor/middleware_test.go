package supervisor

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/api"
)

func TestPanicBecomesJSON500(t *testing.T) {
	s := &Server{log: hclog.NewNullLogger()}
	h := withRequestID(s.withRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body api.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 500 || body.OK || body.Error.Code != "internal_error" || !strings.Contains(body.Error.Message, resp.Header.Get(RequestIDHeader)) {
		t.Fatalf("%d %+v", resp.StatusCode, body)
	}
	// The listener survives: the next request is served.
	resp2, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
}

func TestHostAllowList(t *testing.T) {
	s := &Server{allowedHosts: allowedHostSet("127.0.0.1:4317", []string{"svc.example:443", "[fd00::1]"})}
	for host, want := range map[string]bool{
		"127.0.0.1:4317":   true,
		"localhost":        true,
		"LOCALHOST:80":     true,
		"[::1]:4317":       true,
		"svc.example":      true,
		"svc.example:8443": true,
		"[fd00::1]:1":      true,
		"evil.example":     false,
		"127.0.0.1.nip.io": false,
		"":                 false,
		"localhost.":       false,
	} {
		if got := s.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestRequireToken(t *testing.T) {
	s := &Server{token: "right-token"}
	for header, ok := range map[string]bool{
		"":                        false,
		"Bearer right-token":      true,
		"bearer right-token":      true,
		"Bearer wrong":            false,
		"Basic right-token":       false,
		"Bearer right-token-more": false,
		"Bearer":                  false,
	} {
		r := httptest.NewRequest("POST", "/v1/exec", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		err := s.requireToken(r)
		if (err == nil) != ok {
			t.Errorf("%q: err = %v", header, err)
		}
		if err != nil && api.AsError(err).Status != 401 {
			t.Errorf("%q: status %d", header, api.AsError(err).Status)
		}
	}
}
