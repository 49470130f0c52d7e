package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one client operation as the client saw it: what it sent where,
// when it started and ended, and what it was told.
type Op struct {
	ID     string    `json:"id"`
	Kind   string    `json:"kind"` // mode_write, exec, file_write, relay_buffered, relay_sse, relay_cancel, agent_turn …
	Node   string    `json:"node"` // n1 or n2: where the request was sent
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Status int       `json:"status,omitempty"` // HTTP status; 0 when none came
	Code   string    `json:"code,omitempty"`   // error.code of a failure
	Err    string    `json:"err,omitempty"`    // transport error
	// Outcome is the client's reading of the answer: ok, failed (a
	// documented refusal), ambiguous (no answer: it may have happened).
	Outcome string         `json:"outcome"`
	Detail  map[string]any `json:"detail,omitempty"`
}

// Fault is one injected fault and the time it lasted.
type Fault struct {
	Kind   string    `json:"kind"`
	Target string    `json:"target"` // n1, n2, w, n1/hostops …
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Note   string    `json:"note,omitempty"`
}

// History collects operations and faults from every goroutine.
type History struct {
	mu     sync.Mutex
	ops    []*Op
	faults []Fault
	skips  []string
	seq    atomic.Int64
}

// NewID is a run-unique operation id with kind's prefix.
func (h *History) NewID(prefix string) string { return fmt.Sprintf("%s-%d", prefix, h.seq.Add(1)) }

// Add records a finished operation.
func (h *History) Add(op *Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// AddFault records a finished fault.
func (h *History) AddFault(f Fault) {
	h.mu.Lock()
	h.faults = append(h.faults, f)
	h.mu.Unlock()
}

// Skip records a fault kind this machine cannot inject, with why.
func (h *History) Skip(why string) {
	h.mu.Lock()
	h.skips = append(h.skips, why)
	h.mu.Unlock()
}

// Ops and Faults are copies, for the checkers.
func (h *History) Ops() []*Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Op(nil), h.ops...)
}

func (h *History) Faults() []Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Fault(nil), h.faults...)
}

// Write saves the whole history as JSON (for a failed run's replay).
func (h *History) Write(path string, seed int64, broken []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := json.MarshalIndent(map[string]any{"seed": seed, "broken": broken, "skipped_faults": h.skips, "faults": h.faults, "ops": h.ops}, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
