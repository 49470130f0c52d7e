package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/svcd/svcd/shared/api"
)

// Forward proxies a stateful call from this standby to the leader's API.
// The caller's Authorization and body go along unchanged; Origin and the
// Sec-Fetch-* headers are dropped because this node's guard has already
// judged them (the leader would otherwise see a foreign origin). A call that
// was itself forwarded is never forwarded again.
func (c *Cluster) Forward(w http.ResponseWriter, r *http.Request) {
	if by := r.Header.Get(ForwardedByHeader); by != "" {
		api.WriteError(w, api.Unavailable("not_leader", "node %s forwarded this call here, but %s is not the leader either; retry", by, c.opts.NodeID))
		return
	}
	id, addr, ok := c.LeaderAPI()
	if !ok {
		api.WriteError(w, api.Unavailable("no_leader", "this node (%s) is a standby and knows no leader API address yet (leader %q); retry shortly", c.opts.NodeID, id).
			WithDetails(map[string]any{"leader_id": id, "retry_after_ms": 500}))
		return
	}
	ctx, stop := c.untilLeaderMoves(r.Context(), id, addr)
	defer stop()
	r = r.WithContext(ctx)
	target := &url.URL{Scheme: "http", Host: addr}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = addr
			for _, h := range []string{"Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-User"} {
				pr.Out.Header.Del(h)
			}
			pr.Out.Header.Set(ForwardedByHeader, c.opts.NodeID)
		},
		Transport:     c.forward,
		FlushInterval: -1, // stream SSE answers as they come
		ModifyResponse: func(resp *http.Response) error {
			guardSSE(resp, id, addr)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			var moved *leaderMoved
			if errors.As(context.Cause(ctx), &moved) {
				// The call may have reached the old leader: a write's
				// outcome is unknown (docs/ha.md).
				err = fmt.Errorf("%v; a write may or may not have been applied", moved)
			}
			api.WriteError(w, api.Unavailable("leader_unreachable", "forwarding to the leader %s at %s failed: %v; retry", id, addr, err).
				WithDetails(map[string]any{"leader_id": id, "leader_api": addr}))
		},
	}
	proxy.ServeHTTP(w, r)
}
