package guard

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/svcd/svcd/shared/api"
)

// Bearer checks Authorization: Bearer <token> in constant time. It is the
// one token check of every listener that takes the shared token (the
// daemon's routes, agentd). Two Authorization headers are refused rather
// than one picked: first-wins would let a proxy's header and a caller's
// disagree about who is asking. An empty token matches nothing.
func Bearer(r *http.Request, token string) error {
	values := r.Header.Values("Authorization")
	if len(values) > 1 {
		return api.BadRequest("duplicate_authorization", "more than one Authorization header; send exactly one")
	}
	auth := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if auth == "" {
		return api.Unauthorized("missing Authorization: Bearer <SVC_SHARED_TOKEN> header")
	}
	if len(auth) < len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return api.Unauthorized("Authorization header must use the Bearer scheme")
	}
	given := []byte(strings.TrimSpace(auth[len(prefix):]))
	if token == "" || subtle.ConstantTimeCompare(given, []byte(token)) != 1 {
		return api.Unauthorized("wrong bearer token")
	}
	return nil
}
