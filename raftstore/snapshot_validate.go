package raftstore

import (
	"fmt"
	"time"
)

// Validation of a restored state (issue 34 §4). A snapshot file is the one
// way state enters the FSM without a command, so it is held to the rules
// the commands enforce: a known mode, well-formed hashes, scopes and ids,
// times that make sense, and every area within the bound its commands keep
// it in. A state that breaks one is refused whole (422 invalid_snapshot)
// and nothing changes.

// InvalidStateError says which rule a snapshot's state breaks.
type InvalidStateError struct{ Reason string }

func (e *InvalidStateError) Error() string { return "snapshot state is not valid: " + e.Reason }

func invalid(format string, args ...any) error {
	return &InvalidStateError{Reason: fmt.Sprintf(format, args...)}
}

// maxRestoredMembers bounds the cluster area of a snapshot (a few nodes and
// a witness in practice).
const maxRestoredMembers = 64

// validateState checks s (decoded from a snapshot payload) as the FSM's
// commands would have built it.
func validateState(s *State) error {
	if s.System.Mode != "" && !ValidMode(s.System.Mode) {
		return invalid("system.mode %q is not one of running, paused, draining", s.System.Mode)
	}
	if err := checkTime("system.updated_at", s.System.UpdatedAt, true); err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		n    int
		max  int
	}{
		{"pairing.codes", len(s.Pairing.Codes), MaxPairCodes},
		{"pairing.clients", len(s.Pairing.Clients), MaxPairedClients},
		{"pairing.refused", len(s.Pairing.Refused), MaxRefusalBuckets},
		{"pairing.revoked", len(s.Pairing.Revoked), MaxPairedClients},
		{"browser.clients", len(s.Browser.Clients), MaxBrowserClients},
		{"browser.records", len(s.Browser.Records), MaxBrowserRecords},
		{"relay.targets", len(s.Relay.Targets), MaxRelayTargets},
		{"conversations.by_id", len(s.Conversations.ByID), MaxConversations},
		{"cluster.members", len(s.Cluster.Members), maxRestoredMembers},
	} {
		if b.n > b.max {
			return invalid("%s holds %d entries; the most the daemon keeps is %d", b.name, b.n, b.max)
		}
	}
	return validatePairing(&s.Pairing)
}

// checkTime refuses a time outside years 2000..9999 (zero is allowed when
// optional): JSON takes any RFC 3339 time, the daemon never writes those.
func checkTime(name string, t time.Time, optional bool) error {
	if t.IsZero() && optional {
		return nil
	}
	if t.Year() < 2000 || t.Year() > 9999 {
		return invalid("%s %s is not a time the daemon writes", name, t.Format(time.RFC3339))
	}
	return nil
}

func validatePairing(p *PairingState) error {
	for key, pc := range p.Codes {
		if pc == nil || pc.Hash != key {
			return invalid("pairing.codes[%q]: the entry's hash must be its key", key)
		}
		if err := checkHash("pairing code hash", pc.Hash); err != nil {
			return invalid("pairing.codes: %v", err)
		}
		if err := checkScopes(pc.Scopes); err != nil {
			return invalid("pairing.codes: %v", err)
		}
		if err := checkTime("pairing code issued_at", pc.IssuedAt, false); err != nil {
			return err
		}
		if err := checkTime("pairing code expires_at", pc.ExpiresAt, false); err != nil {
			return err
		}
		if !pc.ExpiresAt.After(pc.IssuedAt) {
			return invalid("pairing.codes: expires_at must be after issued_at")
		}
	}
	for id, cl := range p.Clients {
		if cl == nil || cl.ClientID != id {
			return invalid("pairing.clients[%q]: the entry's client_id must be its key", id)
		}
		if err := needID("pairing client_id", id); err != nil {
			return invalid("%v", err)
		}
		if err := checkHash("cred_hash", cl.CredHash); err != nil {
			return invalid("pairing.clients[%q]: %v", id, err)
		}
		if err := checkScopes(cl.Scopes); err != nil {
			return invalid("pairing.clients[%q]: %v", id, err)
		}
		if !cl.HasScope(ScopeBridge) {
			return invalid("pairing.clients[%q]: every paired client holds scope %s", id, ScopeBridge)
		}
		if err := checkTime("paired_at", cl.PairedAt, false); err != nil {
			return err
		}
	}
	for key, r := range p.Refused {
		if r == nil || r.Key != key {
			return invalid("pairing.refused[%q]: the entry's key must be its key", key)
		}
		if err := checkRefusals(*r, true); err != nil {
			return invalid("pairing.refused[%q]: %v", key, err)
		}
	}
	for id, rv := range p.Revoked {
		if rv == nil || rv.ClientID != id {
			return invalid("pairing.revoked[%q]: the entry's client_id must be its key", id)
		}
		if err := checkHash("revoked cred_hash", rv.CredHash); err != nil {
			return invalid("pairing.revoked[%q]: %v", id, err)
		}
		if err := checkTime("revoked_at", rv.At, false); err != nil {
			return err
		}
	}
	return nil
}
