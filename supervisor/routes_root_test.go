package supervisor

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// GET / sends a browser to the panel and gives a program a JSON index.
func TestRootRedirectsBrowsersAndIndexesPrograms(t *testing.T) {
	_, hs := newTestServer(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", hs.URL+"/", nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != PanelPath {
		t.Fatalf("browser GET /: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, accept := range []string{"", "*/*", "application/json"} {
		req, _ := http.NewRequest("GET", hs.URL+"/", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			OK   bool      `json:"ok"`
			Data rootIndex `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !env.OK || env.Data.Panel != PanelPath || env.Data.Describe != "/describe" {
			t.Fatalf("GET / with Accept %q: %d %+v %v", accept, resp.StatusCode, env, err)
		}
	}
}

// HEAD answers on every GET route except streams and WebSocket upgrades:
// the GET's status and headers, no body.
func TestHeadOnGetRoutes(t *testing.T) {
	s, hs := newTestServer(t)
	checked := 0
	for _, rt := range s.routes {
		if rt.Method != http.MethodGet || rt.NoLimit || strings.Contains(rt.Path, "{") || rt.Auth {
			continue
		}
		get, err := http.Get(hs.URL + rt.Path)
		if err != nil {
			t.Fatal(err)
		}
		get.Body.Close()
		head, err := http.Head(hs.URL + rt.Path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(head.Body)
		head.Body.Close()
		if head.StatusCode != get.StatusCode || len(body) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes, GET gave %d", rt.Path, head.StatusCode, len(body), get.StatusCode)
		}
		if ct := get.Header.Get("Content-Type"); head.Header.Get("Content-Type") != ct {
			t.Errorf("HEAD %s: Content-Type %q, GET %q", rt.Path, head.Header.Get("Content-Type"), ct)
		}
		checked++
	}
	if checked < 15 {
		t.Fatalf("only %d GET routes checked", checked)
	}
	// A write route stays 405 for HEAD.
	head, err := http.Head(hs.URL + "/v1/exec")
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("HEAD /v1/exec: %d, want 405", head.StatusCode)
	}
}

// FuzzWantsHTML: any Accept header is read without panic, and the answer
// is true exactly when one of its media ranges is text/html.
func FuzzWantsHTML(f *testing.F) {
	for _, s := range []string{"", "*/*", "text/html", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
		"application/json", " TEXT/HTML ; q=0.1", "text/htmlx", ",,;;", "text/plain;text/html"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		got := wantsHTML(r)
		want := false
		for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
			if mt, _, _ := strings.Cut(part, ";"); strings.EqualFold(strings.TrimSpace(mt), "text/html") {
				want = true
			}
		}
		if got != want {
			t.Fatalf("wantsHTML(%q) = %v", accept, got)
		}
	})
}
