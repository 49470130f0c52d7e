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
	UpdatedAt   *time.Time         `json:"updated_at"`
	Leader      systemstate.Leader `json:"leader"`
	Queue       systemstate.Queue  `json:"queue"`
	// ActiveRunCount counts /v1/system/state's active_runs (an array there).
	ActiveRunCount int        `json:"active_run_count"`
	Version        string     `json:"version,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	UptimeMs       int64      `json:"uptime_ms,omitempty"`
	// Sandbox is the exec sandbox's levels (no paths; /v1/runtime has the
	// whole report) and SandboxLevel the panel's one-line summary of them.
	Sandbox      map[string]any `json:"sandbox,omitempty"`
	SandboxLevel string         `json:"sandbox_level,omitempty"`
	Browser      *Browser       `json:"browser,omitempty"`
	Workers      []Worker       `json:"workers,omitempty"`
	Cluster      []Member       `json:"cluster,omitempty"`
	Convs        []Conversation `json:"conversations,omitempty"`
	Tasks        []Task         `json:"recent_tasks,omitempty"`
	Source       string         `json:"source"`
	GeneratedAt  time.Time      `json:"generated_at"`
}

// Worker is one worker process line on the panel (filled by the daemon only).
type Worker struct {
	Name      string     `json:"name"`
	State     string     `json:"state"`
	Pid       int        `json:"pid,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	Restarts  int        `json:"restarts"`
	LastExit  *Exit      `json:"last_exit,omitempty"`
	// LastError says why a worker is failed or restarting; NextRetryAt
	// when the manager tries it again.
	LastError   string     `json:"last_error,omitempty"`
	NextRetryAt *time.Time `json:"next_retry_at,omitempty"`
}

// Exit is how a worker's last instance ended.
type Exit struct {
	Code   int       `json:"code"` // -1 when killed by a signal
	Signal string    `json:"signal,omitempty"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Browser is the bridge's clients as the panel shows them (filled by the
// daemon from the bridge hub's read model).
type Browser struct {
	PairingMode string   `json:"pairing_mode"`
	Connected   int      `json:"connected"`
	Clients     []Client `json:"clients"`
	// Refused counts hellos refused at pairing: an installed but unpaired
	// extension shows up here.
	Refused     int64  `json:"refused"`
	RefusedLast string `json:"refused_last_reason,omitempty"`
}

// Client is one browser extension instance.
type Client struct {
	ClientID   string     `json:"client_id"`
	Browser    string     `json:"browser"`
	Connected  bool       `json:"connected"`
	Paired     bool       `json:"paired"`
	Scopes     []string   `json:"scopes"`
	Platforms  []string   `json:"platforms"`
	LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
}

// Member is one cluster member line on the panel (filled by the daemon
// when it runs in a cluster).
type Member struct {
	NodeID  string `json:"node_id"`
	Role    string `json:"role"`
	APIAddr string `json:"api_addr,omitempty"`
	Self    bool   `json:"self"`
	// LagEntries and LastContact describe how far this node, when it is a
	// standby, is behind the leader (self only: raft tells a node nothing
	// of its peers' progress unless it leads).
	LagEntries  *uint64    `json:"lag_entries,omitempty"`
	LastContact *time.Time `json:"last_contact,omitempty"`
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
	Source string
	// Version, StartedAt and Sandbox describe the daemon process (zero in
	// the status wrapper, which only sees /v1/system/state).
	Version   string
	StartedAt time.Time
	Sandbox   map[string]any
	// SandboxLevel is the panel's one-line summary of Sandbox.
	SandboxLevel string
	Browser      *Browser
	Workers      []Worker
	Cluster      []Member
	Convs        []Conversation
	Tasks        []Task
	Now          time.Time
}

// Assemble builds the snapshot. A nil System gives daemon_reachable=false,
// mode "unknown" and the error text, so the panel can say the daemon is down.
func Assemble(in Input) Snapshot {
	snap := Snapshot{Service: "svcd", Source: in.Source, GeneratedAt: in.Now.UTC(), Version: in.Version, Sandbox: in.Sandbox, SandboxLevel: in.SandboxLevel, Browser: in.Browser, Workers: in.Workers, Cluster: in.Cluster, Convs: in.Convs, Tasks: in.Tasks}
	if !in.StartedAt.IsZero() {
		at := in.StartedAt.UTC()
		snap.StartedAt = &at
		snap.UptimeMs = in.Now.Sub(in.StartedAt).Milliseconds()
	}
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
	snap.UpdatedAt = st.UpdatedAt
	snap.Leader = st.Leader
	snap.Queue = st.Queue
	snap.ActiveRunCount = len(st.ActiveRuns)
	return snap
}
