package raftstore

import (
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"sort"
	"time"
)

// Pairing commands (issue 25 §1). Only hashes of pairing codes and bridge
// credentials are proposed: keyed ones (HMAC-SHA256 under a key derived from
// the cluster key, which is in no snapshot and no raft entry; Keyed true),
// or, written before issue 34, unkeyed SHA-256 (Keyed false) — those keep
// working until used (a credential is then re-keyed) or expired (a code).
// Whatever is proposed whatever is proposed lands in the raft
// log on disk, and a standby that becomes leader must know them too, which
// is why they live here and not in the bridge's memory.
const (
	CmdPairCode   = "browser.pair_code"   // a pairing code was issued
	CmdPairRedeem = "browser.pair_redeem" // a code was exchanged for a client credential
	CmdPairRevoke = "browser.pair_revoke" // a client's credential was revoked
	CmdPairScope  = "browser.pair_scope"  // a scope was granted or taken back
	CmdPairRekey  = "browser.pair_rekey"  // a legacy (unkeyed) credential hash replaced by its keyed one
)

// Scopes a paired client may hold.
const (
	ScopeBridge  = "bridge"   // the bridge itself; every paired client has it
	ScopeHostOps = "host-ops" // instruction blocks from its conversations may run host operations
)

// ValidScope reports whether s is a scope the daemon knows.
func ValidScope(s string) bool { return s == ScopeBridge || s == ScopeHostOps }

// Bounds of the pairing area.
const (
	MaxPairCodes     = 64
	MaxPairedClients = MaxBrowserClients
	// expiredCodeMemory is how long an expired code is kept (hashed) so a
	// late redeem is told "expired" rather than "unknown".
	expiredCodeMemory = time.Hour
)

// PairingState holds the issued codes (by hash) and the paired clients.
type PairingState struct {
	Codes   map[string]*PairCode     `json:"codes"`   // by code hash
	Clients map[string]*PairedClient `json:"clients"` // by clientId
	// Refused counts refused hellos per bucket (client:ID, remote:IP) and
	// RefusedTotal all of them (pairing_refusals.go).
	Refused      map[string]*Refusals `json:"refused"`
	RefusedTotal Refusals             `json:"refused_total"`
	// Revoked remembers each client's last revoked credential (its hash and
	// when), so restoring a snapshot taken before the revocation does not
	// bring the credential back (backup.go, issue 34 §5). Bounded like the
	// clients, the oldest dropped first.
	Revoked map[string]*Revocation `json:"revoked,omitempty"`
}

// Revocation is one revoked credential.
type Revocation struct {
	ClientID string    `json:"client_id"`
	CredHash string    `json:"cred_hash"`
	At       time.Time `json:"at"`
}

// PairCode is one issued, not yet redeemed code: its hash only.
type PairCode struct {
	Hash      string    `json:"hash"`
	Scopes    []string  `json:"scopes"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
	IssuedBy  string    `json:"issued_by,omitempty"`
	Keyed     bool      `json:"keyed,omitempty"` // Hash is an HMAC, not a bare SHA-256
}

// PairedClient is a client holding a bridge credential: its hash only.
type PairedClient struct {
	ClientID  string    `json:"client_id"`
	CredHash  string    `json:"cred_hash"`
	Keyed     bool      `json:"keyed,omitempty"` // CredHash is an HMAC, not a bare SHA-256
	Scopes    []string  `json:"scopes"`
	PairedAt  time.Time `json:"paired_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// HasScope reports whether the client holds scope.
func (p *PairedClient) HasScope(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// PairCodeIssue is the payload of CmdPairCode.
type PairCodeIssue struct {
	Hash      string    `json:"hash"`
	Scopes    []string  `json:"scopes"`
	ExpiresAt time.Time `json:"expires_at"`
	IssuedBy  string    `json:"issued_by,omitempty"`
	Keyed     bool      `json:"keyed,omitempty"`
}

// PairRedeem is the payload of CmdPairRedeem.
type PairRedeem struct {
	CodeHash string `json:"code_hash"`
	ClientID string `json:"client_id"`
	CredHash string `json:"cred_hash"`
	Keyed    bool   `json:"keyed,omitempty"` // CredHash is keyed
}

// PairRekey is the payload of CmdPairRekey: client's unkeyed OldHash is
// replaced by the keyed NewHash (only if OldHash is still what is stored).
type PairRekey struct {
	ClientID string `json:"client_id"`
	OldHash  string `json:"old_hash"`
	NewHash  string `json:"new_hash"`
}

// PairRevoke is the payload of CmdPairRevoke.
type PairRevoke struct {
	ClientID string `json:"client_id"`
}

// PairScope is the payload of CmdPairScope.
type PairScope struct {
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	Grant    bool   `json:"grant"`
}

// Redeem refusals; the bridge tells them apart for the plugin.
var (
	ErrCodeUnknown = fmt.Errorf("pairing code unknown or already used")
	ErrCodeExpired = fmt.Errorf("pairing code expired")
)

func (p *PairingState) normalize() {
	if p.Codes == nil {
		p.Codes = map[string]*PairCode{}
	}
	if p.Clients == nil {
		p.Clients = map[string]*PairedClient{}
	}
	if p.Refused == nil {
		p.Refused = map[string]*Refusals{}
	}
	if p.Revoked == nil {
		p.Revoked = map[string]*Revocation{}
	}
}

func checkHash(name, h string) error {
	if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
		return fmt.Errorf("%s must be a hex SHA-256", name)
	}
	return nil
}

func checkScopes(scopes []string) error {
	for _, s := range scopes {
		if !ValidScope(s) {
			return fmt.Errorf("unknown scope %q; scopes are %s and %s", s, ScopeBridge, ScopeHostOps)
		}
	}
	return nil
}

// normScopes always holds bridge, each scope once, sorted.
func normScopes(scopes []string) []string {
	set := map[string]bool{ScopeBridge: true}
	for _, s := range scopes {
		set[s] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func applyPairCode(s *State, c Command) (any, error) {
	var p PairCodeIssue
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := checkHash("hash", p.Hash); err != nil {
		return nil, err
	}
	if err := checkScopes(p.Scopes); err != nil {
		return nil, err
	}
	if !p.ExpiresAt.After(c.At) {
		return nil, fmt.Errorf("expires_at must be after the issue time")
	}
	codes := s.Pairing.Codes
	for h, pc := range codes {
		if c.At.Sub(pc.ExpiresAt) > expiredCodeMemory {
			delete(codes, h)
		}
	}
	evictOldest(codes, MaxPairCodes-1, func(pc *PairCode) time.Time { return pc.IssuedAt })
	pc := &PairCode{Hash: p.Hash, Scopes: normScopes(p.Scopes), IssuedAt: c.At, ExpiresAt: p.ExpiresAt, IssuedBy: p.IssuedBy, Keyed: p.Keyed}
	codes[p.Hash] = pc
	return *pc, nil
}

// findCode compares hash against every stored one in constant time (a map
// lookup by a secret's hash would time the lookup).
func (p *PairingState) findCode(hash string) *PairCode {
	var found *PairCode
	for h, pc := range p.Codes {
		if subtle.ConstantTimeCompare([]byte(h), []byte(hash)) == 1 {
			found = pc
		}
	}
	return found
}

// HasCode reports whether a code with this hash is stored (expired or not),
// compared in constant time: the bridge refuses an unknown code before it
// costs a raft write.
func (p *PairingState) HasCode(hash string) bool { return p.findCode(hash) != nil }

func applyPairRedeem(s *State, c Command) (any, error) {
	var p PairRedeem
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := checkHash("code_hash", p.CodeHash); err != nil {
		return nil, err
	}
	if err := checkHash("cred_hash", p.CredHash); err != nil {
		return nil, err
	}
	if err := needID("client_id", p.ClientID); err != nil {
		return nil, err
	}
	pc := s.Pairing.findCode(p.CodeHash)
	if pc == nil {
		return nil, ErrCodeUnknown
	}
	if !c.At.Before(pc.ExpiresAt) {
		return nil, ErrCodeExpired
	}
	delete(s.Pairing.Codes, pc.Hash)
	evictOldest(s.Pairing.Clients, MaxPairedClients-1, func(pc *PairedClient) time.Time { return pc.UpdatedAt })
	cl := &PairedClient{ClientID: p.ClientID, CredHash: p.CredHash, Keyed: p.Keyed, Scopes: pc.Scopes, PairedAt: c.At, UpdatedAt: c.At}
	s.Pairing.Clients[p.ClientID] = cl
	return *cl, nil
}

func applyPairRevoke(s *State, c Command) (any, error) {
	var p PairRevoke
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	cl, ok := s.Pairing.Clients[p.ClientID]
	if !ok {
		return nil, fmt.Errorf("client %q is not paired", p.ClientID)
	}
	delete(s.Pairing.Clients, p.ClientID)
	evictOldest(s.Pairing.Revoked, MaxPairedClients-1, func(r *Revocation) time.Time { return r.At })
	s.Pairing.Revoked[p.ClientID] = &Revocation{ClientID: p.ClientID, CredHash: cl.CredHash, At: c.At}
	return *cl, nil
}

func applyPairScope(s *State, c Command) (any, error) {
	var p PairScope
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if p.Scope != ScopeHostOps {
		return nil, fmt.Errorf("only scope %s can be granted or taken back (%s is every paired client's)", ScopeHostOps, ScopeBridge)
	}
	cl, ok := s.Pairing.Clients[p.ClientID]
	if !ok {
		return nil, fmt.Errorf("client %q is not paired", p.ClientID)
	}
	var scopes []string
	for _, sc := range cl.Scopes {
		if sc != p.Scope {
			scopes = append(scopes, sc)
		}
	}
	if p.Grant {
		scopes = append(scopes, p.Scope)
	}
	cl.Scopes, cl.UpdatedAt = normScopes(scopes), c.At
	return *cl, nil
}

func applyPairRekey(s *State, c Command) (any, error) {
	var p PairRekey
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if err := checkHash("old_hash", p.OldHash); err != nil {
		return nil, err
	}
	if err := checkHash("new_hash", p.NewHash); err != nil {
		return nil, err
	}
	cl, ok := s.Pairing.Clients[p.ClientID]
	if !ok {
		return nil, fmt.Errorf("client %q is not paired", p.ClientID)
	}
	// Only the legacy hash the bridge verified is replaced: a credential
	// paired again (or re-keyed by the other node) meanwhile stays.
	if cl.Keyed || subtle.ConstantTimeCompare([]byte(cl.CredHash), []byte(p.OldHash)) != 1 {
		return *cl, nil
	}
	cl.CredHash, cl.Keyed = p.NewHash, true
	return *cl, nil
}
