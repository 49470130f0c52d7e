// Package systemstate is the one definition of the system state that
// GET /v1/system/state returns, that pause/resume/drain answer with, that the
// browser WebSocket carries as state_snapshot.system and that the status
// wrapper reads. Name a field here once; every surface reuses it.
package systemstate

import "time"

// State is the system state document.
type State struct {
	Mode        string `json:"mode"`
	RequestedBy string `json:"requested_by"`
	Reason      string `json:"reason"`
	// UpdatedAt is null until the first mode write: there is no honest
	// time for the start-up default.
	UpdatedAt  *time.Time `json:"updated_at"`
	Version    uint64     `json:"version"`
	Leader     Leader     `json:"leader"`
	Queue      Queue      `json:"queue"`
	ActiveRuns []Run      `json:"active_runs"`
}

// Leader is the raft leader as the answering node sees it.
type Leader struct {
	NodeID  string `json:"node_id"`
	Address string `json:"address"`
	Self    bool   `json:"self"`
}

// Queue summarises work waiting and running in the durable queues.
type Queue struct {
	Pending int `json:"pending"`
	Running int `json:"running"`
}

// Run is one active run (a renewal job or task being executed).
type Run struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Subject   string    `json:"subject"`
	StartedAt time.Time `json:"started_at"`
}
