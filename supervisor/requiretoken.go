package supervisor

import (
	"strings"

	"github.com/svcd/svcd/shared/guard"
	"github.com/svcd/svcd/supervisor/config"
)

// probeRoutes answer without a token at every require_token level: load
// balancers, systemd and the witness's operator poll them.
var probeRoutes = map[string]bool{"healthz": true, "readyz": true, "rolez": true}

// applyTokenPolicy marks the routes that demand the shared token under the
// configured require_token level. It runs on the route table itself, so the
// router, /describe, /v1/capabilities and every other view of the table agree
// on which routes need it, and a route added later is covered by the level
// without anybody remembering to.
func applyTokenPolicy(routes []Route, level string) {
	for i := range routes {
		routes[i].Auth = routes[i].Auth || tokenRequired(routes[i], level)
	}
}

func tokenRequired(rt Route, level string) bool {
	if strings.HasPrefix(rt.Path, "/ws/") {
		// The browser WebSocket pairs in its hello frame: a browser cannot
		// set Authorization on an upgrade.
		return false
	}
	switch level {
	case config.RequireTokenWrites:
		return !guard.SafeMethod(rt.Method)
	case config.RequireTokenAll:
		return !probeRoutes[rt.Name]
	}
	return false
}
