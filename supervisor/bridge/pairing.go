package bridge

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/shared/keyderive"
)

// Pairing by one-time code (issue 25 §1). A code is issued through the
// token-guarded route, stored only as its keyed hash in raft (HMAC under a
// key derived from the cluster key: issue 34), and exchanged
// once at hello for a per-client credential (also stored only hashed). The
// credential opens the bridge as that clientId and nothing else: no HTTP
// route looks at it.

// codeAlphabet has 32 symbols without 0/O and 1/I, so a code read aloud or
// retyped survives; 8 symbols are 40 bits, plenty for a 10-minute,
// single-use, rate-limited secret.
const codeAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"

// credentialPrefix marks a bridge credential, so one pasted where a token
// belongs is recognisable (and refused) at a glance.
const credentialPrefix = "svcb_"

// Defaults of pairing.
const (
	DefaultCodeTTL         = 10 * time.Minute
	MaxCodeTTL             = 24 * time.Hour
	DefaultPairingFailures = 10          // failed code hellos per address, and per client id, and window
	pairingFailWindow      = time.Minute // the window those are counted in
	// MaxPendingCodes is how many unexpired codes may wait at once; past it
	// issuing answers 429 rather than let raft's bound (MaxPairCodes) evict
	// a code someone is still typing.
	MaxPendingCodes = 16
)

// NewPairingCode returns a fresh code formatted XXXX-XXXX.
func NewPairingCode() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	out := make([]byte, 0, 9)
	for i, v := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, codeAlphabet[int(v)%len(codeAlphabet)])
	}
	return string(out)
}

// normCode normalises a typed code (case, dashes, spaces).
func normCode(code string) string {
	return strings.ToUpper(strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, code))
}

// codeHash is a typed code's keyed hash (what is stored since issue 34).
func (h *Hub) codeHash(code string) string { return keyderive.HexMAC(h.hashKey, normCode(code)) }

// credHash is a credential's keyed hash.
func (h *Hub) credHash(cred string) string { return keyderive.HexMAC(h.hashKey, cred) }

// legacyHash is the unkeyed SHA-256 stored before issue 34; entries with
// it (Keyed false) still verify until used or expired.
func legacyHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func newCredential() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return credentialPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// IssuedCode is what IssueCode answers; Code is shown once and never stored.
type IssuedCode struct {
	Code      string    `json:"code"`
	Scopes    []string  `json:"scopes"`
	ExpiresAt time.Time `json:"expires_at"`
}

// IssueCode stores a new code's hash with scopes and ttl (0: the default).
func (h *Hub) IssueCode(ctx context.Context, scopes []string, ttl time.Duration, by string) (IssuedCode, error) {
	if ttl <= 0 {
		ttl = DefaultCodeTTL
	}
	if ttl > MaxCodeTTL {
		return IssuedCode{}, api.Unprocessable("invalid_ttl", "ttl is at most %s", MaxCodeTTL)
	}
	for _, s := range scopes {
		if !raftstore.ValidScope(s) {
			return IssuedCode{}, api.Unprocessable("invalid_scope", "unknown scope %q; scopes are %s and %s", s, raftstore.ScopeBridge, raftstore.ScopeHostOps)
		}
	}
	if n, next := h.pendingCodes(time.Now()); n >= MaxPendingCodes {
		wait := time.Until(next).Milliseconds() + 1
		return IssuedCode{}, api.NewError(http.StatusTooManyRequests, "too_many_pairing_codes",
			"%d pairing codes are waiting to be used; use one or retry in %s, when the oldest expires", n, time.Until(next).Round(time.Second)).
			WithDetails(map[string]any{"retry_after_ms": wait})
	}
	code := NewPairingCode()
	v, err := h.host.Apply(ctx, raftstore.CmdPairCode, raftstore.PairCodeIssue{Hash: h.codeHash(code), Keyed: true, Scopes: scopes, ExpiresAt: time.Now().Add(ttl).UTC(), IssuedBy: by})
	if err != nil {
		return IssuedCode{}, err
	}
	pc, _ := v.(raftstore.PairCode)
	return IssuedCode{Code: code, Scopes: pc.Scopes, ExpiresAt: pc.ExpiresAt}, nil
}

// pendingCodes counts the unexpired codes and says when the first of them
// expires.
func (h *Hub) pendingCodes(now time.Time) (n int, next time.Time) {
	h.host.Read(func(s *raftstore.State) {
		for _, pc := range s.Pairing.Codes {
			if now.Before(pc.ExpiresAt) {
				n++
				if next.IsZero() || pc.ExpiresAt.Before(next) {
					next = pc.ExpiresAt
				}
			}
		}
	})
	return n, next
}

// authResult is how a hello authenticated.
type authResult struct {
	kind       string   // "token" or "credential"
	scopes     []string // for "credential"
	credential string   // new credential, only when a code was redeemed
}

// refusal is a pairing refusal: its code goes in the error frame.
type refusal struct{ code, message string }

func (r *refusal) Error() string { return r.message }

// authenticate checks hello's one authenticator. Only what can be guessed
// is rate-limited (pairing_limits.go): code hellos by the failed codes of
// their source, their client id and everyone; token hellos by the wrong
// tokens of their source. A credential hello is never refused for what
// others did.
func (h *Hub) authenticate(ctx context.Context, remote string, hello *bridgeproto.Hello) (authResult, *refusal) {
	ip, now := remoteIP(remote), time.Now()
	limited := func(why string) (authResult, *refusal) {
		ref := &refusal{bridgeproto.ErrPairingRateLimited, "too many failed pairing attempts " + why + "; retry in a minute"}
		h.pairing.refused(hello.ClientID, ip, ref, now)
		return authResult{}, ref
	}
	var ticket codeTicket
	switch {
	case hello.Credential != "":
	case hello.Code != "":
		t, bound := h.pairing.limits.reserveCode(ip, hello.ClientID, now)
		if bound != "" {
			return limited(limitReason(bound))
		}
		ticket = t
	default:
		if !h.pairing.limits.tokenAllowed(ip, now) {
			return limited("with a token from this address")
		}
	}
	res, ref := h.checkHello(ctx, hello)
	switch {
	case ref == nil && hello.Code != "":
		h.pairing.limits.forgive(ticket)
	case ref != nil && hello.Credential == "" && hello.Code == "" && ref.code == bridgeproto.ErrPairingFailed:
		h.pairing.limits.tokenFailed(ip, now)
	}
	if ref != nil {
		h.pairing.refused(hello.ClientID, ip, ref, now)
	}
	return res, ref
}

// limitReason completes "too many failed pairing attempts …" per bound.
func limitReason(bound string) string {
	switch bound {
	case "global":
		return "with codes from all addresses (someone may be guessing codes)"
	case "client":
		return "with codes for this clientId"
	}
	return "with codes from this address"
}

func (h *Hub) checkHello(ctx context.Context, hello *bridgeproto.Hello) (authResult, *refusal) {
	switch {
	case hello.Credential != "":
		var cl *raftstore.PairedClient
		h.host.Read(func(s *raftstore.State) {
			if p := s.Pairing.Clients[hello.ClientID]; p != nil {
				cp := *p
				cl = &cp
			}
		})
		want, got := "", h.credHash(hello.Credential)
		if cl != nil {
			want = cl.CredHash
			if !cl.Keyed {
				got = legacyHash(hello.Credential)
			}
		}
		// Compare even for an unknown client, so timing does not say which
		// clientIds are paired.
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 || cl == nil {
			return authResult{}, &refusal{bridgeproto.ErrCredentialInvalid, "credential unknown or revoked for this clientId; pair again with a new code (svcctl browser pair)"}
		}
		if !cl.Keyed {
			h.rekey(ctx, cl.ClientID, want, hello.Credential)
		}
		return authResult{kind: "credential", scopes: cl.Scopes}, nil
	case hello.Code != "":
		// A code issued before issue 34 is stored unkeyed until it expires.
		hash, legacy, known := h.codeHash(hello.Code), legacyHash(normCode(hello.Code)), false
		h.host.Read(func(s *raftstore.State) {
			if known = s.Pairing.HasCode(hash); !known && s.Pairing.HasCode(legacy) {
				hash, known = legacy, true
			}
		})
		if !known {
			// Guessed codes cost no raft write; a known one is redeemed
			// (and its expiry judged) by the FSM, once, on every replica.
			return authResult{}, &refusal{bridgeproto.ErrCodeInvalid, "pairing code unknown or already used; issue a new one (svcctl browser pair)"}
		}
		cred := newCredential()
		v, err := h.host.Apply(ctx, raftstore.CmdPairRedeem, raftstore.PairRedeem{CodeHash: hash, ClientID: hello.ClientID, CredHash: h.credHash(cred), Keyed: true})
		if err != nil {
			switch {
			case strings.Contains(err.Error(), raftstore.ErrCodeExpired.Error()):
				return authResult{}, &refusal{bridgeproto.ErrCodeExpired, "pairing code expired; issue a new one (svcctl browser pair)"}
			case strings.Contains(err.Error(), raftstore.ErrCodeUnknown.Error()):
				return authResult{}, &refusal{bridgeproto.ErrCodeInvalid, "pairing code unknown or already used; issue a new one (svcctl browser pair)"}
			}
			return authResult{}, &refusal{bridgeproto.ErrPairingFailed, "the daemon could not record the pairing right now; try again"}
		}
		cl, _ := v.(raftstore.PairedClient)
		return authResult{kind: "credential", scopes: cl.Scopes, credential: cred}, nil
	default:
		if h.cfg.CodesOnly {
			return authResult{}, &refusal{bridgeproto.ErrTokenPairingOff, "pairing with the shared token is off (browser_pairing = \"codes\"); pair with a code from svcctl browser pair"}
		}
		if !tokenEqual(hello.Token, h.cfg.PairingToken) {
			return authResult{}, &refusal{bridgeproto.ErrPairingFailed, "wrong pairing token"}
		}
		return authResult{kind: "token", scopes: h.cfg.TokenScopes}, nil
	}
}

// rekey replaces a client's legacy credential hash by its keyed one once
// the credential was verified; a failure only leaves the legacy hash for
// the next hello.
func (h *Hub) rekey(ctx context.Context, clientID, oldHash, cred string) {
	if _, err := h.host.Apply(ctx, raftstore.CmdPairRekey, raftstore.PairRekey{ClientID: clientID, OldHash: oldHash, NewHash: h.credHash(cred)}); err != nil {
		h.log.Debug("re-keying a legacy credential hash failed", "client_id", clientID, "error", err)
		return
	}
	h.log.Info("browser client credential re-keyed (legacy SHA-256 hash replaced by a keyed one)", "client_id", clientID)
}

func remoteIP(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// pairingGuard rate-limits guesses (pairing_limits.go; memory only: a
// flood must not become raft writes) and counts refusals. The counts are
// durable (raftstore pairing_refusals.go) but reach raft only through
// flushRefusals, once per RefusalFlush, as one command per flush.
type pairingGuard struct {
	limits *guessLimits
	mu     sync.Mutex
	// pendTotal and pend are the refusals not yet flushed to raft.
	// flushing is held (write) by a flush from take to the end of its
	// Apply, and (read) by a reader of raft+pending, so a reader never
	// sees a delta in neither place (or in both).
	flushing  sync.RWMutex
	pendTotal raftstore.Refusals
	pend      map[string]*raftstore.Refusals
}

// RefusedPairings is the visible count and last reason of refused hellos,
// with the most recently refused buckets (client id and remote address).
type RefusedPairings struct {
	Count        int64     `json:"count"`
	LastReason   string    `json:"last_reason,omitempty"`
	LastCode     string    `json:"last_code,omitempty"`
	LastClientID string    `json:"last_client_id,omitempty"`
	LastRemote   string    `json:"last_remote,omitempty"`
	LastAt       time.Time `json:"last_at,omitzero"`
	// Unflushed is how many of Count are counted in this process but not yet
	// proposed to raft (the bridge batches them, at most a second): a SIGKILL
	// now would lose them. 0 means every refusal shown is durable.
	Unflushed int64 `json:"unflushed"`
	// Recent are the last refused buckets, newest first (at most
	// recentRefusals): key client:ID or remote:ADDRESS.
	Recent []raftstore.Refusals `json:"recent"`
}

// recentRefusals is how many buckets the read model shows.
const recentRefusals = 10

func newPairingGuard(perKey, global int) *pairingGuard {
	return &pairingGuard{limits: newGuessLimits(perKey, global, pairingFailWindow), pend: map[string]*raftstore.Refusals{}}
}

// refused counts a refusal (a failed authentication, an invalid first
// message, a rate-limited attempt).
func (g *pairingGuard) refused(clientID, ip string, r *refusal, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noteLocked(clientID, ip, r, now)
}

func (g *pairingGuard) noteLocked(clientID, ip string, r *refusal, now time.Time) {
	one := raftstore.Refusals{Count: 1, LastCode: r.code, LastReason: clip(r.message, 300), LastClientID: clip(clientID, 256), LastRemote: clip(ip, 256), LastAt: now.UTC()}
	g.pendTotal.Add(one)
	for _, key := range []string{raftstore.RefusalByClient + one.LastClientID, raftstore.RefusalByRemote + one.LastRemote} {
		if key == raftstore.RefusalByClient || key == raftstore.RefusalByRemote {
			continue // no client id (or address) to count under
		}
		b := g.pend[key]
		if b == nil {
			if len(g.pend) >= 2*raftstore.MaxRefusalBuckets {
				continue // a spray of ids between two flushes: the total still counts
			}
			b = &raftstore.Refusals{Key: key}
			g.pend[key] = b
		}
		b.Add(one)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// take returns and clears the unflushed refusals (ok false: none).
func (g *pairingGuard) take() (raftstore.PairRefusalsDelta, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pendTotal.Count == 0 {
		return raftstore.PairRefusalsDelta{}, false
	}
	d := raftstore.PairRefusalsDelta{Total: g.pendTotal, Buckets: make([]raftstore.Refusals, 0, len(g.pend))}
	for _, b := range g.pend {
		d.Buckets = append(d.Buckets, *b)
	}
	g.pendTotal, g.pend = raftstore.Refusals{}, map[string]*raftstore.Refusals{}
	return d, true
}

// putBack returns a delta whose flush failed to the pending counts, so the
// next flush carries it (bounded like any other pending refusal).
func (g *pairingGuard) putBack(d raftstore.PairRefusalsDelta) {
	g.mu.Lock()
	defer g.mu.Unlock()
	later := g.pendTotal
	g.pendTotal = d.Total
	g.pendTotal.Add(later)
	for _, b := range d.Buckets {
		cur := g.pend[b.Key]
		if cur == nil {
			if len(g.pend) >= 2*raftstore.MaxRefusalBuckets {
				continue
			}
			cp := b
			g.pend[b.Key] = &cp
			continue
		}
		merged := b
		merged.Add(*cur)
		*cur = merged
	}
}

// pendingView merges the unflushed refusals into the durable ones and says
// how many were unflushed.
func (g *pairingGuard) pendingView(total raftstore.Refusals, buckets map[string]raftstore.Refusals) (raftstore.Refusals, map[string]raftstore.Refusals, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	unflushed := g.pendTotal.Count
	total.Add(g.pendTotal)
	for k, b := range g.pend {
		cur := buckets[k]
		cur.Key = k
		cur.Add(*b)
		buckets[k] = cur
	}
	return total, buckets, unflushed
}

// flushRefusals proposes the refusals counted since the last flush as one
// command; a failed flush keeps them for the next.
func (h *Hub) flushRefusals(ctx context.Context) {
	h.pairing.flushing.Lock()
	defer h.pairing.flushing.Unlock()
	d, ok := h.pairing.take()
	if !ok {
		return
	}
	if _, err := h.host.Apply(ctx, raftstore.CmdPairRefusals, d); err != nil {
		h.pairing.putBack(d)
		h.log.Debug("refused pairings flush failed", "error", err)
	}
}

// RefusedPairings is the count and last reason of refused hellos (durable
// across restarts and leader switches), with the most recent buckets.
func (h *Hub) RefusedPairings() RefusedPairings {
	var total raftstore.Refusals
	buckets := map[string]raftstore.Refusals{}
	h.pairing.flushing.RLock()
	defer h.pairing.flushing.RUnlock()
	h.host.Read(func(s *raftstore.State) {
		total = s.Pairing.RefusedTotal
		for k, b := range s.Pairing.Refused {
			buckets[k] = *b
		}
	})
	total, buckets, unflushed := h.pairing.pendingView(total, buckets)
	recent := make([]raftstore.Refusals, 0, len(buckets))
	for _, b := range buckets {
		recent = append(recent, b)
	}
	sort.Slice(recent, func(i, j int) bool {
		if !recent[i].LastAt.Equal(recent[j].LastAt) {
			return recent[i].LastAt.After(recent[j].LastAt)
		}
		return recent[i].Key < recent[j].Key
	})
	if len(recent) > recentRefusals {
		recent = recent[:recentRefusals]
	}
	return RefusedPairings{Count: total.Count, LastReason: total.LastReason, LastCode: total.LastCode,
		LastClientID: total.LastClientID, LastRemote: total.LastRemote, LastAt: total.LastAt, Unflushed: unflushed, Recent: recent}
}

// ClientAuth is how a live client authenticated: "token", "credential", or
// "" when it is not connected.
func (h *Hub) ClientAuth(clientID string) string {
	if c := h.conn(clientID); c != nil {
		return c.auth
	}
	return ""
}

// Revoke removes clientID's credential and closes its live connection at
// once with 4401 (after an error frame saying why).
func (h *Hub) Revoke(ctx context.Context, clientID string) error {
	if _, err := h.host.Apply(ctx, raftstore.CmdPairRevoke, raftstore.PairRevoke{ClientID: clientID}); err != nil {
		if strings.Contains(err.Error(), "is not paired") {
			return api.NotFound("client_not_paired", "browser client %q holds no pairing credential", clientID)
		}
		return err
	}
	if c := h.conn(clientID); c != nil && c.auth == "credential" {
		c.sendError(bridgeproto.ErrCredentialRevoked, "this client's credential was revoked; pair again with a new code", bridgeproto.TypeHello, "")
		c.close(CloseUnauthorized, "credential revoked")
	}
	h.log.Info("browser client credential revoked", "client_id", clientID)
	return nil
}

// SetScope grants (grant) or takes back scope for a paired client.
func (h *Hub) SetScope(ctx context.Context, clientID, scope string, grant bool) (raftstore.PairedClient, error) {
	if scope != raftstore.ScopeHostOps {
		return raftstore.PairedClient{}, api.Unprocessable("invalid_scope", "only scope %q can be granted or taken back; %q is every paired client's", raftstore.ScopeHostOps, raftstore.ScopeBridge)
	}
	v, err := h.host.Apply(ctx, raftstore.CmdPairScope, raftstore.PairScope{ClientID: clientID, Scope: scope, Grant: grant})
	if err != nil {
		if strings.Contains(err.Error(), "is not paired") {
			return raftstore.PairedClient{}, api.NotFound("client_not_paired", "browser client %q is not paired with a code; scopes belong to code-paired clients", clientID)
		}
		return raftstore.PairedClient{}, err
	}
	cl, _ := v.(raftstore.PairedClient)
	h.log.Info("browser client scope changed", "client_id", clientID, "scope", scope, "grant", grant)
	return cl, nil
}

func (r *refusal) String() string { return fmt.Sprintf("%s: %s", r.code, r.message) }

// PairingView is the pairing part of the read model: the mode, how many
// codes wait to be redeemed, and the refused attempts (an installed but
// unpaired extension shows here).
type PairingView struct {
	Mode         string          `json:"mode"` // codes or token
	PendingCodes int             `json:"pending_codes"`
	Refused      RefusedPairings `json:"refused"`
}

func (h *Hub) pairingView() PairingView {
	v := PairingView{Mode: "token", Refused: h.RefusedPairings()}
	if h.cfg.CodesOnly {
		v.Mode = "codes"
	}
	v.PendingCodes, _ = h.pendingCodes(time.Now())
	return v
}

// pairingOf fills a client view's pairing fields; call inside Read.
func (h *Hub) pairingOf(cv *ClientView, s *raftstore.State) {
	cv.Auth = h.ClientAuth(cv.ClientID)
	cv.Scopes = []string{}
	if p := s.Pairing.Clients[cv.ClientID]; p != nil {
		cv.Paired = true
		cv.Scopes = append(cv.Scopes, p.Scopes...)
	}
	if cv.Auth == "token" {
		cv.Scopes = append([]string{}, h.cfg.TokenScopes...)
	}
}

// HasScope reports whether clientID's live connection may act with scope:
// a token-paired connection has TokenScopes, a credential-paired one the
// scopes stored with its credential now (a grant or revoke-scope takes
// effect at the next batch, without reconnecting).
func (h *Hub) HasScope(clientID, scope string) bool {
	switch h.ClientAuth(clientID) {
	case "token":
		for _, s := range h.cfg.TokenScopes {
			if s == scope {
				return true
			}
		}
	case "credential":
		ok := false
		h.host.Read(func(s *raftstore.State) {
			if p := s.Pairing.Clients[clientID]; p != nil {
				ok = p.HasScope(scope)
			}
		})
		return ok
	}
	return false
}
