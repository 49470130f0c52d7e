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
	h := s.frontDoor(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
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

func TestRequireTokenRefusesTwoAuthorizationHeaders(t *testing.T) {
	s := &Server{token: "right-token"}
	r := httptest.NewRequest("POST", "/v1/exec", nil)
	r.Header.Add("Authorization", "Bearer right-token")
	r.Header.Add("Authorization", "Bearer other")
	err := s.requireToken(r)
	if err == nil || api.AsError(err).Status != 400 || api.AsError(err).Code != "duplicate_authorization" {
		t.Fatalf("two Authorization headers: %v", err)
	}
}
