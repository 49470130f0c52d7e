// Package relay is the relay policy engine: per target (platform + client +
// account) it keeps a rate-limit window, an exponential backoff that honours
// Retry-After, and a circuit breaker. The supervisor admits browser requests
// from tokens the engine grants in bulk (Lease, lease.go) or, when none can
// be granted, one at a time (Admit), and hands outcomes back in batches. It
// runs in the relay worker process (go-plugin); this file is its interface.
package relay

import (
	"context"

	"github.com/svcd/svcd/shared/keyrange"
)

// Relay is the engine as the supervisor sees it, in-process or over gRPC.
type Relay interface {
	// Admit decides whether one request to target may go now. It may wait
	// (bounded) for a concurrency slot; that wait is the "waiting" count.
	Admit(ctx context.Context, target string) (Decision, error)
	// Report ends an admitted request and feeds its outcome to the policy.
	Report(ctx context.Context, o Outcome) (Changed bool, err error)
	// Status is the policy, and the state and in-process counters of the
	// targets whose keys are in keys (keyrange.Range{}: every target).
	Status(ctx context.Context, keys keyrange.Range) (Status, error)
	// TakeDirty returns targets changed since the last call, for the
	// supervisor to persist through raft.
	TakeDirty(ctx context.Context) ([]TargetState, error)
	// Restore loads persisted state (at start-up, or into a restarted worker).
	Restore(ctx context.Context, states []TargetState) error
}

// Decision is Admit's answer.
type Decision struct {
	Allowed      bool   `json:"allowed"`
	Reason       string `json:"reason,omitempty"` // rate_limited, backoff, circuit_open, circuit_half_open, busy
	RetryAfterMs int64  `json:"retry_after_ms,omitempty"`
	Changed      bool   `json:"changed,omitempty"` // a state transition worth persisting now
	// Probe marks the one request a half-open breaker lets through; its
	// Outcome must carry Probe back, so that only it decides the breaker.
	Probe bool `json:"probe,omitempty"`
}

// Outcome is what happened to an admitted request. Status 0 with Cancelled
// false is a transport failure (the page could not reach the platform).
type Outcome struct {
	Target       string `json:"target"`
	Status       int    `json:"status"`
	RetryAfterMs int64  `json:"retry_after_ms,omitempty"`
	Cancelled    bool   `json:"cancelled,omitempty"`
	Probe        bool   `json:"probe,omitempty"` // Decision.Probe of this request's admission
}

// Breaker states.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// TargetState is the durable part of one target. Times are unix millis so
// the struct crosses gRPC and JSON unchanged.
type TargetState struct {
	Target          string `json:"target"`
	WindowStartMs   int64  `json:"window_start_ms"`
	WindowCount     int    `json:"window_count"`
	BackoffUntilMs  int64  `json:"backoff_until_ms"`
	BackoffLevel    int    `json:"backoff_level"`
	Breaker         string `json:"breaker"`
	BreakerFailures int    `json:"breaker_failures"`
	BreakerOpenedMs int64  `json:"breaker_opened_ms"`
	LastStatus      int    `json:"last_status"`
	LastOutcomeMs   int64  `json:"last_outcome_ms"`
	Admitted        int64  `json:"admitted"`
	Refused         int64  `json:"refused"`
}

// Live is a target's in-process load: never persisted, never restored.
type Live struct {
	InFlight int `json:"in_flight"`
	Waiting  int `json:"waiting"`
}

// Status is the engine's policy and its targets' state and live counters
// (those of the range asked for).
type Status struct {
	Policy  Policy                 `json:"policy"`
	Live    map[string]Live        `json:"live"`
	Targets map[string]TargetState `json:"targets"` // the engine's current view, ahead of the last flush
}
