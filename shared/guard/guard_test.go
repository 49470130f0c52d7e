package guard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/svcd/svcd/shared/api"
)

func TestHostAllowList(t *testing.T) {
	p := New("127.0.0.1:4317", []string{"svc.example:443", "[fd00::1]"}, nil)
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
		if got := p.HostAllowed(host); got != want {
			t.Errorf("HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

// reached records whether the wrapped handler ran.
type reached struct{ hit bool }

func (h *reached) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.hit = true
	w.WriteHeader(http.StatusOK)
}

func TestWritesMatrix(t *testing.T) {
	p := New("127.0.0.1:4317", nil, []string{"chrome-extension://abcdefghijklmnop"})
	type tc struct {
		name    string
		method  string
		headers map[string]string
		body    string
		status  int
		code    string
	}
	json := map[string]string{"Content-Type": "application/json"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{"Content-Type": "application/json"}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	cases := []tc{
		{"plain json write", "POST", json, "{}", 200, ""},
		{"json with charset", "POST", map[string]string{"Content-Type": "application/json; charset=utf-8"}, "{}", 200, ""},
		{"empty write without type", "POST", nil, "", 200, ""},
		{"text/plain body", "POST", map[string]string{"Content-Type": "text/plain"}, "{}", 415, "unsupported_media_type"},
		{"form body", "POST", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "a=b", 415, "unsupported_media_type"},
		{"multipart body", "POST", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, "--x--", 415, "unsupported_media_type"},
		{"body without type", "POST", nil, "{}", 415, "unsupported_media_type"},
		{"evil origin", "POST", with(map[string]string{"Origin": "http://evil.example"}), "{}", 403, "origin_not_allowed"},
		{"null origin", "POST", with(map[string]string{"Origin": "null"}), "{}", 403, "origin_not_allowed"},
		{"localhost other port", "POST", with(map[string]string{"Origin": "http://localhost:3000"}), "{}", 403, "origin_not_allowed"},
		{"unknown extension", "POST", with(map[string]string{"Origin": "chrome-extension://zzzz"}), "{}", 403, "origin_not_allowed"},
		{"own origin", "POST", with(map[string]string{"Origin": "http://127.0.0.1:4317"}), "{}", 200, ""},
		{"configured origin cross-site", "POST", with(map[string]string{"Origin": "chrome-extension://abcdefghijklmnop", "Sec-Fetch-Site": "cross-site"}), "{}", 200, ""},
		{"sec-fetch cross-site", "POST", with(map[string]string{"Sec-Fetch-Site": "cross-site"}), "{}", 403, "cross_site_request"},
		{"sec-fetch same-site", "POST", with(map[string]string{"Sec-Fetch-Site": "same-site"}), "{}", 403, "cross_site_request"},
		{"sec-fetch same-origin", "POST", with(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:4317"}), "{}", 200, ""},
		{"sec-fetch none", "POST", with(map[string]string{"Sec-Fetch-Site": "none"}), "{}", 200, ""},
		{"cross-site text/plain no-cors", "POST", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}, "{}", 403, "origin_not_allowed"},
		{"delete from evil origin", "DELETE", map[string]string{"Origin": "http://evil.example"}, "", 403, "origin_not_allowed"},
		{"get from evil origin passes", "GET", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, "", 200, ""},
		// The exact serialised origin: the daemon serves plain HTTP only.
		{"own host over https", "POST", with(map[string]string{"Origin": "https://127.0.0.1:4317"}), "{}", 403, "origin_not_allowed"},
		{"own host with a trailing slash", "POST", with(map[string]string{"Origin": "http://127.0.0.1:4317/"}), "{}", 403, "origin_not_allowed"},
		{"own host in upper case scheme", "POST", with(map[string]string{"Origin": "HTTP://127.0.0.1:4317"}), "{}", 403, "origin_not_allowed"},
		{"configured origin in another case", "POST", with(map[string]string{"Origin": "chrome-extension://ABCDEFGHIJKLMNOP"}), "{}", 403, "origin_not_allowed"},
		{"configured origin with a trailing slash", "POST", with(map[string]string{"Origin": "chrome-extension://abcdefghijklmnop/"}), "{}", 403, "origin_not_allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &reached{}
			req := httptest.NewRequest(c.method, "http://127.0.0.1:4317/v1/system/pause", strings.NewReader(c.body))
			if c.body == "" {
				req = httptest.NewRequest(c.method, "http://127.0.0.1:4317/v1/system/pause", nil)
			}
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			p.Writes(h).ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			if c.status != 200 {
				if h.hit {
					t.Fatal("the handler ran for a refused request")
				}
				assertCode(t, rec, c.code)
			}
		})
	}
}

func TestPreflight(t *testing.T) {
	p := New("127.0.0.1:4317", nil, []string{"chrome-extension://abcdefghijklmnop"})
	for origin, allowed := range map[string]bool{"chrome-extension://abcdefghijklmnop": true, "http://evil.example": false} {
		req := httptest.NewRequest("OPTIONS", "http://127.0.0.1:4317/v1/system/pause", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		rec := httptest.NewRecorder()
		h := &reached{}
		p.Writes(h).ServeHTTP(rec, req)
		got := rec.Header().Get("Access-Control-Allow-Origin")
		if allowed && (rec.Code != 204 || got != origin || rec.Header().Get("Access-Control-Allow-Methods") == "") {
			t.Errorf("%s: %d allow-origin %q", origin, rec.Code, got)
		}
		if !allowed && (rec.Code != 403 || got != "" || rec.Header().Get("Access-Control-Allow-Methods") != "") {
			t.Errorf("%s: %d allow-origin %q; a refused preflight must carry no allow headers", origin, rec.Code, got)
		}
		if h.hit {
			t.Errorf("%s: a preflight reached the handler", origin)
		}
	}
}

func assertCode(t *testing.T, rec *httptest.ResponseRecorder, code string) {
	t.Helper()
	var body struct {
		OK    bool `json:"ok"`
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("not JSON: %s", rec.Body)
	}
	if body.OK || body.Error.Code != code || body.Error.Message == "" {
		t.Fatalf("error %+v, want code %s", body.Error, code)
	}
}

// Two Sec-Fetch-Site headers are refused: the first would otherwise win,
// and a page's added header could hide the browser's cross-site one.
func TestDuplicateSecFetchSite(t *testing.T) {
	p := New("127.0.0.1:4317", nil, nil)
	req := httptest.NewRequest("POST", "http://127.0.0.1:4317/v1/system/pause", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Sec-Fetch-Site", "same-origin")
	req.Header.Add("Sec-Fetch-Site", "cross-site")
	rec := httptest.NewRecorder()
	h := &reached{}
	p.Writes(h).ServeHTTP(rec, req)
	if rec.Code != 400 || h.hit {
		t.Fatalf("status %d, handler ran %v", rec.Code, h.hit)
	}
	assertCode(t, rec, "duplicate_header")
}

func TestBearer(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		name   string
		values []string
		token  string
		status int
		code   string
	}{
		{"right", []string{"Bearer " + token}, token, 0, ""},
		{"scheme in another case", []string{"bearer " + token}, token, 0, ""},
		{"missing", nil, token, 401, "unauthorized"},
		{"wrong", []string{"Bearer nope"}, token, 401, "unauthorized"},
		{"basic", []string{"Basic " + token}, token, 401, "unauthorized"},
		{"two headers, right first", []string{"Bearer " + token, "Bearer nope"}, token, 400, "duplicate_authorization"},
		{"two headers, both right", []string{"Bearer " + token, "Bearer " + token}, token, 400, "duplicate_authorization"},
		{"no token configured", []string{"Bearer "}, "", 401, "unauthorized"},
	} {
		req := httptest.NewRequest("GET", "http://127.0.0.1/", nil)
		for _, v := range c.values {
			req.Header.Add("Authorization", v)
		}
		err := Bearer(req, c.token)
		if c.status == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		rec := httptest.NewRecorder()
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		api.WriteError(rec, err)
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d", c.name, rec.Code, c.status)
		}
		assertCode(t, rec, c.code)
	}
}
