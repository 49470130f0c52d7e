// Package scheduler is the renewal scheduler worker (svcd worker
// scheduler): each tick it projects the next renewal job for auto
// conversations that have gone quiet, and dispatches due jobs. It holds no
// state and never opens the raft store: everything goes through the host
// services the supervisor lends it for the tick (Host), over go-plugin's
// GRPCBroker.
package scheduler

import (
	"context"
	"time"
)

// Name is the worker's name: `svcd worker scheduler` and the manager's key.
const Name = "scheduler"

// Settings are the tick's rules (configuration of the supervisor, sent with
// every tick so the worker needs none of its own).
type Settings struct {
	IdleAfterMs int64  `json:"idle_after_ms"` // quiet this long after the last AI reply (or renewal): project a job
	Message     string `json:"message"`       // the renewal message
	MaxFailures int    `json:"max_failures"`  // failed deliveries in a row before an automatic pause
	MaxRenewals int    `json:"max_renewals"`  // renewals without a new reply before an automatic pause
	MaxPerTick  int    `json:"max_per_tick"`  // jobs dispatched per tick at most
}

// Host is what the supervisor lends a tick.
type Host interface {
	// Apply writes one raftstore command (payload as JSON); refused says the
	// FSM refused it (the state did not change).
	Apply(ctx context.Context, typ string, payload any) (value []byte, refused bool, err error)
	// View reads the renewal view as of now, the tick's time (the host
	// may leave out what cannot be due by then).
	View(ctx context.Context, now time.Time) (View, error)
	// Deliver sends a started job's message through the plugin holding its
	// conversation and records the outcome.
	Deliver(ctx context.Context, jobID string) (Delivery, error)
}

// View is what a tick needs of the state.
type View struct {
	Mode          string         `json:"mode"` // running, paused, draining
	Conversations []Conversation `json:"conversations"`
	Jobs          []Job          `json:"jobs"` // pending and running ones
}

// Conversation is the scheduler's view of one conversation.
type Conversation struct {
	LocalID          string    `json:"local_conversation_id"`
	AutomationStatus string    `json:"automation_status"`
	ExecutionState   string    `json:"execution_state"`
	LastActivityAt   time.Time `json:"last_activity_at"` // last AI reply or last finished renewal
	Linked           bool      `json:"linked"`           // a plugin holds it
	// Reachable: the plugin holding it is connected now. A due job of a
	// conversation nobody can type into waits instead of failing: after a
	// daemon restart the plugin is back a moment later, and a job failed
	// meanwhile would be followed by a new one with a new delivery key,
	// typing a renewal the crash had already delivered a second time.
	Reachable bool `json:"reachable"`
}

// Job is the scheduler's view of one open job.
type Job struct {
	ID      string    `json:"job_id"`
	LocalID string    `json:"local_conversation_id"`
	Status  string    `json:"status"`
	DueAt   time.Time `json:"due_at"`
}

// Delivery is the outcome of Host.Deliver.
type Delivery struct {
	OK         bool
	InjectID   string
	Level      int
	StatusCode int
	Error      string
}

// Result is what one tick did.
type Result struct {
	Projected           int      `json:"projected"`
	Dispatched          int      `json:"dispatched"`
	Done                int      `json:"done"`
	Failed              int      `json:"failed"`
	SkippedSystemPaused bool     `json:"skipped_system_paused"`
	Errors              []string `json:"errors,omitempty"`
}

// Scheduler runs ticks. The worker's Engine implements it; the
// supervisor's GRPCClient reaches it.
type Scheduler interface {
	Tick(ctx context.Context, host Host, now time.Time, s Settings) (Result, error)
}
