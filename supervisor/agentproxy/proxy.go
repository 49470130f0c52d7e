// Package agentproxy forwards the main daemon's /v1/agent routes to agentd's
// own HTTP API (/v1/agentd/*), adding the shared token itself. When agentd
// is down or answers garbage, callers get a 503 agent_unavailable.
package agentproxy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/workers/agentd"
)

// Proxy calls one agentd.
type Proxy struct {
	base   string // http://127.0.0.1:PORT
	token  string
	secret string // the spawn's secret agentd proves itself with ("" = not checked)
	client *http.Client
}

// New returns a proxy to the agentd listening on listen. With a secret
// (the one this daemon handed the agentd it spawned), every answer must
// carry agentd's proof of it (workers/agentd/proof.go): an agentd of
// another daemon on that address is refused with 503 agent_unavailable.
func New(listen, token, secret string) *Proxy {
	return &Proxy{base: "http://" + listen, token: token, secret: secret, client: &http.Client{
		// Turns with waitMs can take agentd's maximum wait; nothing else is slow.
		Timeout: 150 * time.Second,
	}}
}

// BaseURL is agentd's address.
func (p *Proxy) BaseURL() string { return p.base }

func unavailable(err error) error {
	return api.Unavailable("agent_unavailable", "agentd is not answering (%v); is it running? (svcd agentd, or agentd_spawn = true)", err)
}

// Forward sends method+path with body to agentd and copies its JSON answer
// back: the status and envelope agentd chose (its 4xx errors are already the
// common JSON error body). A transport failure or a non-JSON answer is a 503.
func (p *Proxy) Forward(w http.ResponseWriter, r *http.Request, method, path string) error {
	var body io.Reader
	if method != http.MethodGet {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return api.AsError(api.NewError(http.StatusRequestEntityTooLarge, "body_too_large", "request body: %v", err))
		}
		body = bytes.NewReader(b)
	}
	status, raw, err := p.do(r.Context(), method, path, body)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(raw)
	return nil
}

func (p *Proxy) do(ctx context.Context, method, path string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	challenge := p.challenge(req.Header)
	if id := reqid.From(ctx); id != "" {
		req.Header.Set(reqid.Header, id) // agentd's lines for the call carry it too
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, unavailable(err)
	}
	defer resp.Body.Close()
	if err := p.checkProof(challenge, resp.Header); err != nil {
		return 0, nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, nil, unavailable(err)
	}
	if !json.Valid(raw) {
		return 0, nil, unavailable(errFromStatus(resp.StatusCode))
	}
	return resp.StatusCode, raw, nil
}

// challenge sets a fresh challenge on h and returns it ("" without a
// secret: nothing to check).
func (p *Proxy) challenge(h http.Header) string {
	if p.secret == "" {
		return ""
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	c := hex.EncodeToString(b[:])
	h.Set(agentd.ChallengeHeader, c)
	return c
}

// checkProof refuses an answer without the right proof of challenge.
func (p *Proxy) checkProof(challenge string, h http.Header) error {
	if challenge == "" {
		return nil
	}
	if !hmac.Equal([]byte(h.Get(agentd.ProofHeader)), []byte(agentd.Proof(p.secret, challenge))) {
		return api.Unavailable("agent_unavailable", "the agentd at %s is not this daemon's (it did not prove the secret this daemon gave its agentd; another daemon's agentd on that port?)", p.base)
	}
	return nil
}

type errFromStatus int

func (e errFromStatus) Error() string {
	return "it answered HTTP " + http.StatusText(int(e)) + " without a JSON body"
}

// Summary is GET /v1/agent: the proxy's view, agentd's status, session
// summaries and the routes available here.
func (p *Proxy) Summary(ctx context.Context, routes []string) (Summary, error) {
	_, rawStatus, err := p.do(ctx, http.MethodGet, "/v1/agentd/status", nil)
	if err != nil {
		return Summary{}, err
	}
	_, rawSessions, err := p.do(ctx, http.MethodGet, "/v1/agentd/sessions", nil)
	if err != nil {
		return Summary{}, err
	}
	var st struct {
		Data map[string]any `json:"data"`
	}
	var ss struct {
		Data struct {
			Sessions []SessionSummary `json:"sessions"`
		} `json:"data"`
	}
	if json.Unmarshal(rawStatus, &st) != nil || json.Unmarshal(rawSessions, &ss) != nil {
		return Summary{}, unavailable(errFromStatus(http.StatusBadGateway))
	}
	summaries := ss.Data.Sessions
	if summaries == nil {
		summaries = []SessionSummary{}
	}
	return Summary{
		Proxy:    ProxyInfo{AgentdURL: p.base, Reachable: true},
		Agentd:   st.Data,
		Sessions: summaries,
		Routes:   routes,
	}, nil
}

// Summary is GET /v1/agent's data. Fields here and below are in the order
// the maps they replaced encoded them (byte-compatible answers).
type Summary struct {
	// Agentd is agentd's own status answer (GET /v1/agentd/status's
	// data), relayed as agentd wrote it.
	Agentd   map[string]any   `json:"agentd"`
	Proxy    ProxyInfo        `json:"proxy"`
	Routes   []string         `json:"routes"`
	Sessions []SessionSummary `json:"sessions"`
}

// ProxyInfo says where the proxy forwards.
type ProxyInfo struct {
	AgentdURL string `json:"agentd_url"`
	Reachable bool   `json:"reachable"`
}

// SessionSummary is the part of each of agentd's sessions the summary
// shows; a field agentd left out is null.
type SessionSummary struct {
	Cwd            *string `json:"cwd"`
	LastTurnStatus *string `json:"lastTurnStatus"`
	Purpose        *string `json:"purpose"`
	SessionID      *string `json:"sessionId"`
	Status         *string `json:"status"`
	UpdatedAt      *string `json:"updatedAt"`
}
