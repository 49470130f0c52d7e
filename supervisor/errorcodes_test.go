package supervisor

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Route.Errors is written by hand; nothing in the compiler ties it to the
// codes a handler returns. The check is dynamic rather than a source walk:
// handlers return codes through many layers (area packages, the bridge,
// the workers' results, errors built from variables), which a go/ast pass
// would follow only partly and would have to be taught every new helper.
// Instead every server the supervisor's tests start (newTestServer) taps
// each error answer a handler writes (errortap.go) into seenErrors, for the
// whole test run: every test of the package adds to it, and
// TestRouteErrorsUnderBadInput drives each route with bad input so every
// route is exercised at least that way. After the run, TestMain fails the
// package when a handler answered a (status, code) its route does not list
// (Route.Errors plus sharedErrors, the codes the route's kind implies), or
// answered an error that is not the JSON envelope. Run with
// SVCD_ERRORS_UNSEEN=1 to also print the listed codes no test produced
// (informative: some need a dead worker or a lost leader).
var seenErrors = &errorLog{seen: map[string]map[string]bool{}, routes: map[string]Route{}}

type errorLog struct {
	mu     sync.Mutex
	seen   map[string]map[string]bool // route name -> "status code"
	routes map[string]Route
	table  []Route // the route table of the bad-input drive
}

func (l *errorLog) record(rt Route, status int, code string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[rt.Name] == nil {
		l.seen[rt.Name] = map[string]bool{}
	}
	l.seen[rt.Name][fmt.Sprintf("%d %s", status, code)] = true
	l.routes[rt.Name] = rt
}

// undeclared lists every tapped error its route does not list.
func (l *errorLog) undeclared() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for name, seen := range l.seen {
		rt := l.routes[name]
		for sc := range seen {
			var status int
			var code string
			fmt.Sscanf(sc, "%d %s", &status, &code)
			switch {
			case code == "":
				out = append(out, fmt.Sprintf("%s (%s %s) answered %d without the JSON error envelope", name, rt.Method, rt.Path, status))
			case !declared(rt, status, code):
				out = append(out, fmt.Sprintf("%s (%s %s) answered %d %q, which its Route.Errors does not list (add it, or fix the handler)", name, rt.Method, rt.Path, status, code))
			}
		}
	}
	sort.Strings(out)
	return out
}

// unseen lists the route-specific codes (Route.Errors) no test produced.
func (l *errorLog) unseen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, rt := range l.table {
		for status, codes := range rt.Errors {
			for _, code := range codes {
				if !l.seen[rt.Name][fmt.Sprintf("%d %s", status, code)] {
					out = append(out, fmt.Sprintf("%s: %d %s", rt.Name, status, code))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bad := seenErrors.undeclared(); len(bad) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: handlers answered errors their routes do not list (errorcodes_test.go):")
		for _, b := range bad {
			fmt.Fprintln(os.Stderr, "  "+b)
		}
		if code == 0 {
			code = 1
		}
	}
	if os.Getenv("SVCD_ERRORS_UNSEEN") == "1" {
		for _, u := range seenErrors.unseen() {
			fmt.Fprintln(os.Stderr, "listed, never produced: "+u)
		}
	}
	os.Exit(code)
}

// TestRouteErrorsUnderBadInput sends every route the bad input a careless
// or hostile caller sends: unknown path ids, no body, a malformed body, a
// body with an unknown field, an empty object, wrong query values. Each
// error answer goes through the tap; TestMain checks them all against the
// routes' lists. The test itself checks that every answer of 400 or more is
// the JSON envelope and that nothing answers 500.
func TestRouteErrorsUnderBadInput(t *testing.T) {
	s, hs := newTestServer(t)
	seenErrors.mu.Lock()
	seenErrors.table = s.routes
	seenErrors.mu.Unlock()
	client := &http.Client{}
	bodies := []string{"", "{", `{"zz_not_a_field":1}`, `{}`, `[]`, `{"platform":"nope","clientId":"zz","id":"zz","worker":"zz","mode":"zz"}`}
	skip := map[string]bool{
		// Drained last: it changes what the others answer.
		"system.drain": true, "system.pause": true, "system.mode": true,
	}
	var last []Route
	for _, rt := range s.routes {
		if rt.NoLimit && rt.Method == http.MethodGet {
			continue // streams and WebSocket upgrades
		}
		if skip[rt.Name] {
			last = append(last, rt)
			continue
		}
		driveRoute(t, client, hs.URL, rt, bodies)
	}
	for _, rt := range last {
		driveRoute(t, client, hs.URL, rt, bodies)
	}
	if n := len(seenErrors.seen); n < 20 {
		t.Fatalf("only %d routes answered an error under bad input; the drive is not reaching the handlers", n)
	}
}

func driveRoute(t *testing.T, client *http.Client, base string, rt Route, bodies []string) {
	t.Helper()
	for _, id := range []string{"zz-unknown", "..%2Fx", strings.Repeat("x", 300)} {
		path := fillPath(rt.Path, id)
		queries := []string{""}
		for _, q := range rt.Query {
			queries = append(queries, q.Name+"=zz%20bad", q.Name+"=-1", q.Name+"=999999999999")
		}
		for _, q := range queries {
			url := base + path
			if q != "" {
				url += "?" + q
			}
			sends := []string{""}
			if isWrite(rt.Method) {
				sends = bodies
			}
			for _, body := range sends {
				req, err := http.NewRequest(rt.Method, url, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				req.Header.Set("Authorization", "Bearer unit-test-token")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", rt.Method, url, err)
				}
				ct := resp.Header.Get("Content-Type")
				resp.Body.Close()
				if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusGatewayTimeout && resp.StatusCode != http.StatusBadGateway {
					t.Errorf("%s %s body %q: %d", rt.Method, url, body, resp.StatusCode)
				}
				if resp.StatusCode >= 400 && !strings.HasPrefix(ct, "application/json") {
					t.Errorf("%s %s body %q: %d with Content-Type %q, want the JSON error envelope", rt.Method, url, body, resp.StatusCode, ct)
				}
			}
		}
	}
}

// fillPath puts id into every {var} of a route template.
func fillPath(tmpl, id string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		j := strings.IndexByte(tmpl[i:], '}')
		b.WriteString(tmpl[:i])
		b.WriteString(id)
		tmpl = tmpl[i+j+1:]
	}
}

// The tap itself: a handler's error is reported with its status and code,
// and an error answered outside the envelope with an empty code.
func TestErrorTapReadsTheEnvelope(t *testing.T) {
	var got []string
	tap := func(rt Route, status int, code string) {
		got = append(got, fmt.Sprintf("%s %d %q", rt.Name, status, code))
	}
	for _, c := range []struct {
		write func(http.ResponseWriter)
		want  string
	}{
		{func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"ok":false,"error":{"code":"unknown_x","message":"m"}}`))
		}, `r 404 "unknown_x"`},
		{func(w http.ResponseWriter) { http.Error(w, "plain", 400) }, `r 400 ""`},
		{func(w http.ResponseWriter) { _, _ = w.Write([]byte("fine")) }, ``},
	} {
		got = nil
		w, done := tapErrors(&discardWriter{h: http.Header{}}, Route{Name: "r"}, tap)
		c.write(w)
		done()
		if strings.Join(got, "") != c.want {
			t.Errorf("tapped %v, want %q", got, c.want)
		}
	}
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
