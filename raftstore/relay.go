package raftstore

import (
	"fmt"
	"time"

	"github.com/svcd/svcd/shared/keyrange"
)

// CmdRelaySave stores relay policy state for some targets. The relay engine
// saves when a target's state changes (backoff, breaker) and flushes its
// window counters periodically: never one raft commit per request.
const CmdRelaySave = "relay.save"

// Breaker states.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// MaxRelayTargets bounds the relay area.
const MaxRelayTargets = 2048

// RelayState holds the durable relay policy state per target. in_flight and
// waiting are deliberately absent: they describe this process only.
type RelayState struct {
	Targets map[string]*RelayTarget `json:"targets"`
	// index is Targets' keys in order, for GET /v1/browser's pages (the
	// targets of a range of record keys). Derived (not in snapshots):
	// normalize rebuilds it, applyRelaySave keeps it.
	index keyrange.Keys
}

// TargetsIn calls fn for each target whose key is in r, in key order,
// until fn returns false. Like all of State, only inside Node.Read.
func (r *RelayState) TargetsIn(kr keyrange.Range, fn func(t *RelayTarget) bool) {
	r.index.Walk(kr, func(key string) bool {
		if t := r.Targets[key]; t != nil {
			return fn(t)
		}
		return true
	})
}

// RelayTarget is one target's rate-limit window, backoff and breaker.
type RelayTarget struct {
	Target          string    `json:"target"`
	WindowStart     time.Time `json:"window_start"`
	WindowCount     int       `json:"window_count"`
	BackoffUntil    time.Time `json:"backoff_until,omitzero"`
	BackoffLevel    int       `json:"backoff_level"`
	Breaker         string    `json:"breaker"`
	BreakerFailures int       `json:"breaker_failures"`
	BreakerOpenedAt time.Time `json:"breaker_opened_at,omitzero"`
	LastStatus      int       `json:"last_status"`
	LastOutcomeAt   time.Time `json:"last_outcome_at,omitzero"`
	Admitted        int64     `json:"admitted"`
	Refused         int64     `json:"refused"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// RelaySave is the payload of CmdRelaySave.
type RelaySave struct {
	Targets []RelayTarget `json:"targets"`
}

func (r *RelayState) normalize() {
	if r.Targets == nil {
		r.Targets = map[string]*RelayTarget{}
	}
	keyrange.Reset(&r.index, r.Targets)
}

func applyRelaySave(s *State, c Command) (any, error) {
	var p RelaySave
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	for _, t := range p.Targets {
		if err := needID("target", t.Target); err != nil {
			return nil, err
		}
		switch t.Breaker {
		case BreakerClosed, BreakerOpen, BreakerHalfOpen:
		default:
			return nil, fmt.Errorf("target %s: unknown breaker state %q", t.Target, t.Breaker)
		}
	}
	for _, t := range p.Targets {
		t := t
		t.UpdatedAt = c.At
		if s.Relay.Targets[t.Target] == nil {
			for _, gone := range evictOldest(s.Relay.Targets, MaxRelayTargets-1, func(x *RelayTarget) time.Time { return x.UpdatedAt }) {
				s.Relay.index.Remove(gone)
			}
			s.Relay.index.Add(t.Target)
		}
		s.Relay.Targets[t.Target] = &t
	}
	return len(p.Targets), nil
}
