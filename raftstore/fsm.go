package raftstore

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// fsm is the raft finite state machine over State. Snapshots are the whole
// state as JSON: it is small (metadata only) and JSON keeps it inspectable.
type fsm struct {
	mu       sync.RWMutex
	state    *State
	handlers map[string]handler
	// version counts changes to state (applies and restores). It moves under
	// mu, before the write is acknowledged, so a reader that loads it after
	// an acknowledged write sees a new value: a cache keyed by it never
	// answers a state older than the caller's own write.
	version atomic.Uint64
	// applied is the index of the last command applied here, set before
	// Apply returns and so before the write's future answers. raft's own
	// AppliedIndex moves in its main loop after it hands entries to the
	// FSM goroutine, so an acknowledged write can still read below its own
	// index there (Node.AppliedIndex takes the larger of the two).
	applied atomic.Uint64
}

func newFSM() *fsm {
	return &fsm{state: newState(), handlers: handlers()}
}

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) any {
	var c Command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return applyResult{err: fmt.Errorf("undecodable command at index %d: %w", l.Index, err)}
	}
	h, ok := f.handlers[c.Type]
	if !ok {
		return applyResult{err: fmt.Errorf("unknown command type %q", c.Type)}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Handlers validate before they mutate, so an error leaves state as it was.
	v, err := h(f.state, c)
	f.version.Add(1)
	f.applied.Store(l.Index)
	return applyResult{value: v, err: err}
}

// Snapshot implements raft.FSM. The state is encoded under the read lock so
// that Persist can run concurrently with later Applies.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := json.Marshal(f.state)
	if err != nil {
		return nil, err
	}
	return snapshot(b), nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	s := &State{}
	if err := json.NewDecoder(rc).Decode(s); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	s.normalize()
	f.mu.Lock()
	f.state = s
	f.version.Add(1)
	f.mu.Unlock()
	return nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}
