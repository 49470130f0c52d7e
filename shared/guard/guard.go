// Package guard holds the request guards every svcd listener shares: the
// Host allow-list (DNS rebinding) and the write guard against cross-site
// requests (CSRF). They wrap a whole handler, not single routes, so a route
// added later is covered without anybody remembering to add it.
package guard

import (
	"net"
	"net/http"
	"strings"

	"github.com/svcd/svcd/shared/api"
)

// Policy is what the guards allow. Build it with New.
type Policy struct {
	hosts   map[string]struct{}
	origins map[string]struct{}
	// bodyTypes are the routes ("METHOD /path") whose write body is declared
	// to be another media type than application/json (DeclareBodyType).
	bodyTypes map[string]string
}

// DeclareBodyType lets the write to one fixed path carry a body of
// mediaType instead of application/json (a snapshot file, say). The type
// must not be one a page can send without a CORS preflight (text/plain,
// forms, multipart): those stay refused, which is the point of the guard.
// Call it while building the handler, before it serves.
func (p *Policy) DeclareBodyType(method, path, mediaType string) {
	mt := strings.ToLower(strings.TrimSpace(mediaType))
	switch mt {
	case "", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data":
		panic("guard: body type " + mediaType + " would let a page write without a CORS preflight")
	}
	if p.bodyTypes == nil {
		p.bodyTypes = map[string]string{}
	}
	p.bodyTypes[method+" "+path] = mt
}

// New builds a policy: loopback names, the listener's own host and the
// extra hosts are allowed in Host; origins are the Origin values allowed to
// make writes besides the daemon's own (empty by default).
func New(listen string, extraHosts, origins []string) *Policy {
	p := &Policy{
		hosts:   map[string]struct{}{"localhost": {}, "127.0.0.1": {}, "::1": {}},
		origins: map[string]struct{}{},
	}
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		p.hosts[normHost(h)] = struct{}{}
	}
	for _, h := range extraHosts {
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		p.hosts[normHost(h)] = struct{}{}
	}
	for _, o := range origins {
		p.origins[normOrigin(o)] = struct{}{}
	}
	return p
}

func normHost(h string) string { return strings.ToLower(strings.Trim(h, "[]")) }

// normOrigin puts a configured origin in the form a browser serialises one
// (lower case, no trailing slash). Only configuration is normalised: an
// Origin header is compared exactly, as browsers send it.
func normOrigin(o string) string {
	return strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/"))
}

// HostAllowed reports whether a Host header (with or without port) is in the
// allow-list.
func (p *Policy) HostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	_, ok := p.hosts[normHost(host)]
	return ok
}

// OriginAllowed reports whether origin, exactly as sent, is one of the
// configured origins.
func (p *Policy) OriginAllowed(origin string) bool {
	_, ok := p.origins[origin]
	return ok
}

// Hosts refuses requests whose Host header is not in the allow-list, which
// defeats DNS rebinding: a page on evil.example resolving to 127.0.0.1 still
// sends Host: evil.example.
func (p *Policy) Hosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.HostAllowed(r.Host) {
			api.WriteError(w, api.NewError(http.StatusForbidden, "host_not_allowed",
				"Host %q is not allowed; add it to allowed_hosts if this daemon is meant to answer it", clip(r.Host)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// SafeMethod is a method that must not change state, so the write guard
// lets it through (its handlers only read).
func SafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Writes guards every state-changing request before any handler runs:
//
//   - a present Origin must be the daemon's own (http://<the Host it was
//     sent to>) or a configured one: a web page's fetch always carries its
//     Origin, even in no-cors mode;
//   - Sec-Fetch-Site cross-site or same-site is refused unless the Origin is
//     a configured one (browsers send it even where they drop Origin);
//   - a write that carries a body must say Content-Type: application/json:
//     text/plain, form and multipart bodies are what a page can send without
//     a CORS preflight.
//
// CORS preflights are answered here too: allow headers only for a configured
// origin, a 403 otherwise. Callers without a browser (curl, svcctl, the Go
// plugin) send no Origin and no Sec-Fetch-Site and are not affected.
func (p *Policy) Writes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		configured := origin != "" && p.OriginAllowed(origin)
		if configured {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			p.preflight(w, r, configured)
			return
		}
		if SafeMethod(r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		if err := p.checkWrite(r, origin, configured); err != nil {
			api.WriteError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *Policy) checkWrite(r *http.Request, origin string, configured bool) error {
	if len(r.Header.Values("Origin")) > 1 {
		return api.NewError(http.StatusForbidden, "origin_not_allowed", "more than one Origin header; a write names one origin")
	}
	if len(r.Header.Values("Sec-Fetch-Site")) > 1 {
		// First-wins would let an added header hide the browser's own.
		return api.BadRequest("duplicate_header", "more than one Sec-Fetch-Site header; send at most one")
	}
	if origin != "" && !configured && !sameOrigin(origin, r.Host) {
		return api.NewError(http.StatusForbidden, "origin_not_allowed",
			"cross-origin write refused: Origin %q is neither this daemon's own nor in allowed_origins", clip(origin))
	}
	switch site := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site"))); site {
	case "cross-site", "same-site":
		if !configured {
			return api.NewError(http.StatusForbidden, "cross_site_request",
				"write refused: Sec-Fetch-Site is %s; state-changing requests must come from this daemon's own pages or a client without a browser", site)
		}
	}
	want := "application/json"
	if mt, ok := p.bodyTypes[r.Method+" "+r.URL.Path]; ok {
		want = mt
	}
	if hasBody(r) && !isMediaType(r.Header.Values("Content-Type"), want) {
		return api.NewError(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"a request body must be sent as Content-Type: %s (got %q)", want, clip(r.Header.Get("Content-Type")))
	}
	return nil
}

func (p *Policy) preflight(w http.ResponseWriter, r *http.Request, configured bool) {
	if !configured {
		api.WriteError(w, api.NewError(http.StatusForbidden, "origin_not_allowed",
			"CORS preflight refused: Origin %q is not in allowed_origins", clip(r.Header.Get("Origin"))))
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// sameOrigin: the daemon's own pages are served over plain HTTP from the
// Host the request was sent to (already checked against the Host
// allow-list). The comparison is of the exact serialised origin a browser
// sends: https://, another case or a trailing slash is another origin.
func sameOrigin(origin, host string) bool {
	return origin == "http://"+strings.ToLower(host)
}

// hasBody reports whether the request carries a body: a positive length or
// a chunked one of unknown length.
func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

// isMediaType accepts exactly one Content-Type of want, with or without
// parameters.
func isMediaType(values []string, want string) bool {
	if len(values) != 1 {
		return false
	}
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(values[0], ";", 2)[0]))
	return mt == want
}

// clip keeps an echoed header short in an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
