package agentproxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/svcd/svcd/workers/agentd"
)

// With a secret, the proxy takes only answers that prove it: another
// daemon's agentd (another secret, or none) is 503 agent_unavailable, and
// nothing of its answer reaches the caller.
func TestProxyRefusesAnAgentdThatCannotProveTheSecret(t *testing.T) {
	serve := func(secret string) string {
		return fakeAgentd(t, func(w http.ResponseWriter, r *http.Request) {
			if c := r.Header.Get(agentd.ChallengeHeader); c != "" && secret != "" {
				w.Header().Set(agentd.ProofHeader, agentd.Proof(secret, c))
			}
			_, _ = w.Write([]byte(`{"ok":true,"data":{"sessions":[{"sessionId":"OTHER-DAEMONS"}]}}`))
		})
	}
	forward := func(addr string) (*httptest.ResponseRecorder, error) {
		rec := httptest.NewRecorder()
		err := New(addr, "tok", "mine").Forward(rec, httptest.NewRequest("GET", "/v1/agent/sessions", nil), "GET", "/v1/agentd/sessions")
		return rec, err
	}
	if rec, err := forward(serve("mine")); err != nil || rec.Code != 200 {
		t.Fatalf("own agentd: %v %d", err, rec.Code)
	}
	for name, addr := range map[string]string{"another secret": serve("theirs"), "no proof": serve("")} {
		rec, err := forward(addr)
		if err == nil || !strings.Contains(err.Error(), "not this daemon's") || strings.Contains(rec.Body.String(), "OTHER-DAEMONS") {
			t.Fatalf("%s: %v %s", name, err, rec.Body)
		}
	}
}
