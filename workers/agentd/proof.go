package agentd

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// Proof of identity to the main daemon's proxy (issue 34 §7). Two daemons
// on one host must never talk to each other's agentd: the daemon that
// spawns agentd hands it a fresh secret (Config.ProxySecret), the proxy
// sends a random challenge with each call, and agentd answers it with
// HMAC-SHA256(secret, challenge). An agentd of another daemon (or anything
// else on that port) cannot answer, and the proxy refuses its reply.
const (
	ChallengeHeader = "X-Svcd-Agentd-Challenge"
	ProofHeader     = "X-Svcd-Agentd-Proof"
)

// Proof is the answer to challenge under secret.
func Proof(secret, challenge string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(challenge))
	return hex.EncodeToString(m.Sum(nil))
}

// withProof answers a request's challenge (when this agentd has a secret)
// before any handler writes, so every answer carries it, errors included.
func (d *Daemon) withProof(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := r.Header.Get(ChallengeHeader); c != "" && d.cfg.ProxySecret != "" && len(c) <= 128 {
			w.Header().Set(ProofHeader, Proof(d.cfg.ProxySecret, c))
		}
		next.ServeHTTP(w, r)
	})
}
