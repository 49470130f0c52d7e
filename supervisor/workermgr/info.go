package workermgr

import "time"

// Info is one worker as GET /v1/workers shows it.
type Info struct {
	Name        string     `json:"name"`
	State       string     `json:"state"`
	Pid         int        `json:"pid,omitempty"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	Restarts    int        `json:"restarts"`
	InFlight    int        `json:"in_flight"`
	Draining    int        `json:"draining"`
	LastExit    *ExitInfo  `json:"last_exit,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	NextRetryAt *time.Time `json:"next_retry_at,omitempty"`
	// While failed (a crash loop): why, and when it tries again on its own.
	FailedReason string     `json:"failed_reason,omitempty"`
	RetryAt      *time.Time `json:"retry_at,omitempty"`
	Protocol     string     `json:"protocol"`
}

// ExitInfo is how and when an instance ended.
type ExitInfo struct {
	Pid      int       `json:"pid"`
	Code     int       `json:"code"`             // -1 when killed by a signal
	Signal   string    `json:"signal,omitempty"` // e.g. SIGKILL
	At       time.Time `json:"at"`
	Expected bool      `json:"expected"` // stopped by the manager (restart, shutdown)
	Reason   string    `json:"reason,omitempty"`
}
