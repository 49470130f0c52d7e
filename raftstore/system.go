package raftstore

import (
	"fmt"
	"time"
)

// System automation modes (SPEC.md "System mode").
const (
	ModeRunning  = "running"
	ModePaused   = "paused"
	ModeDraining = "draining"
)

// CmdSetSystemMode switches the system-wide automation mode.
const CmdSetSystemMode = "system.set_mode"

// SystemState is the durable part of the system state: the mode and who set
// it, why and when. The supervisor adds the live parts (leader, queue, runs).
type SystemState struct {
	Mode        string    `json:"mode"`
	RequestedBy string    `json:"requested_by"`
	Reason      string    `json:"reason"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Version counts mode writes, so a client can tell two equal modes apart.
	Version uint64 `json:"version"`
}

// SetSystemMode is the payload of CmdSetSystemMode.
type SetSystemMode struct {
	Mode        string `json:"mode"`
	RequestedBy string `json:"requested_by"`
	Reason      string `json:"reason"`
}

// ValidMode reports whether m is one of the three automation modes.
func ValidMode(m string) bool {
	return m == ModeRunning || m == ModePaused || m == ModeDraining
}

func applySetSystemMode(s *State, c Command) (any, error) {
	var p SetSystemMode
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if !ValidMode(p.Mode) {
		return nil, fmt.Errorf("unknown system mode %q", p.Mode)
	}
	s.System = SystemState{
		Mode:        p.Mode,
		RequestedBy: p.RequestedBy,
		Reason:      p.Reason,
		UpdatedAt:   c.At,
		Version:     s.System.Version + 1,
	}
	return s.System, nil
}
