// Package status assembles the narrow status snapshot and renders the HTML
// panel. The daemon (/v1/status, /v1/status/ui) and the status wrapper share
// this one package, so the two surfaces cannot disagree.
package status

import (
	"time"

	"github.com/svcd/svcd/shared/systemstate"
)

// Snapshot is the narrow JSON status (GET /v1/status).
type Snapshot struct {
	Service     string             `json:"service"`
	Reachable   bool               `json:"daemon_reachable"`
	Error       string             `json:"error,omitempty"`
	Mode        string             `json:"mode"`
	RequestedBy string             `json:"requested_by"`
	Reason      string             `json:"reason"`
	UpdatedAt   *time.Time         `json:"updated_at,omitempty"`
	Leader      systemstate.Leader `json:"leader"`
	Queue       systemstate.Queue  `json:"queue"`
	ActiveRuns  int                `json:"active_runs"`
	Workers     []Worker           `json:"workers,omitempty"`
	Cluster     []Member           `json:"cluster,omitempty"`
	Convs       []Conversation     `json:"conversations,omitempty"`
	Tasks       []Task             `json:"recent_tasks,omitempty"`
	Sandbox     map[string]any     `json:"sandbox,omitempty"` // exec sandbox levels (no paths)
	Source      string             `json:"source"`
	GeneratedAt time.Time          `json:"generated_at"`
}

// Worker is one worker process line on the panel (filled by the daemon only).
type Worker struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Restarts int    `json:"restarts"`
}

// Member is one cluster member line on the panel (filled by the daemon
// when it runs in a cluster).
type Member struct {
	NodeID  string `json:"node_id"`
	Role    string `json:"role"`
	APIAddr string `json:"api_addr,omitempty"`
	Self    bool   `json:"self"`
}

// Conversation is one renewal conversation line (filled by the daemon).
type Conversation struct {
	ID               string `json:"local_conversation_id"`
	AutomationStatus string `json:"automation_status"`
	ExecutionState   string `json:"execution_state"`
	PauseReason      string `json:"pause_reason,omitempty"`
	// ClientLoop is the plugin's instruction loop, e.g. "stopped: round
	// limit reached (3/3)" or "running (1/10)"; empty until reported.
	ClientLoop string `json:"client_loop,omitempty"`
}

// Task is one recent task line (filled by the daemon).
type Task struct {
	ID     string `json:"task_id"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
}

// Input is what a snapshot is assembled from.
type Input struct {
	// System is the daemon's /v1/system/state, or nil when it could not be read.
	System *systemstate.State
	// Err says why System is nil.
	Err error
	// Source names where System came from: "local" or the daemon's URL.
	Source  string
	Workers []Worker
	Cluster []Member
	Convs   []Conversation
	Tasks   []Task
	Sandbox map[string]any
	Now     time.Time
}

// Assemble builds the snapshot. A nil System gives daemon_reachable=false,
// mode "unknown" and the error text, so the panel can say the daemon is down.
func Assemble(in Input) Snapshot {
	snap := Snapshot{Service: "svcd", Source: in.Source, GeneratedAt: in.Now.UTC(), Workers: in.Workers, Cluster: in.Cluster, Convs: in.Convs, Tasks: in.Tasks, Sandbox: in.Sandbox}
	if in.System == nil {
		snap.Mode = "unknown"
		if in.Err != nil {
			snap.Error = in.Err.Error()
		} else {
			snap.Error = "no system state"
		}
		return snap
	}
	st := in.System
	snap.Reachable = true
	snap.Mode = st.Mode
	snap.RequestedBy = st.RequestedBy
	snap.Reason = st.Reason
	if !st.UpdatedAt.IsZero() {
		t := st.UpdatedAt
		snap.UpdatedAt = &t
	}
	snap.Leader = st.Leader
	snap.Queue = st.Queue
	snap.ActiveRuns = len(st.ActiveRuns)
	return snap
}
