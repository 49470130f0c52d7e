package bridge

import (
	"net"
	"net/http"
	"strings"

	"github.com/svcd/svcd/shared/api"
)

// proxyHeaders mark a request that came through a proxy. The bridge is a
// local interface: a forwarded request is refused even from loopback,
// because the real peer is then somebody else.
// Presence counts, even with an empty value: a proxy that forwards an empty
// X-Forwarded-For is still a proxy.
var proxyHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Real-Ip", "X-Client-Ip", "Via"}

// checkUpgrade applies the peer, proxy and Origin rules before the upgrade.
func (h *Hub) checkUpgrade(r *http.Request) error {
	for _, name := range proxyHeaders {
		if _, present := r.Header[http.CanonicalHeaderKey(name)]; present {
			return api.NewError(http.StatusForbidden, "proxied_request", "the browser bridge is local only and refuses proxied requests (%s present)", name)
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil || !h.peerAllowed(ip) {
		return api.NewError(http.StatusForbidden, "peer_not_allowed", "the browser bridge serves loopback and configured 100.64.0.0/10 peers only")
	}
	if origin := r.Header.Get("Origin"); origin != "" && !h.originAllowed(origin) {
		return api.NewError(http.StatusForbidden, "origin_not_allowed", "Origin is not an allowed extension origin; add chrome-extension://<id> to browser_extension_ids")
	}
	return nil
}

func (h *Hub) peerAllowed(ip net.IP) bool {
	if ip.IsLoopback() {
		return true
	}
	for _, n := range h.cfg.AllowedPeers {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

func (h *Hub) originAllowed(origin string) bool {
	for _, o := range h.cfg.AllowedOrigins {
		if strings.EqualFold(strings.TrimRight(o, "/"), strings.TrimRight(origin, "/")) {
			return true
		}
	}
	return false
}
