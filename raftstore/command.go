package raftstore

import (
	"encoding/json"
	"fmt"
	"time"
)

// Command is one durable write: a type tag plus a JSON payload. The proposer
// stamps At so that every replica applies the same time (the FSM never reads
// the clock).
type Command struct {
	Type    string          `json:"type"`
	At      time.Time       `json:"at"`
	Payload json.RawMessage `json:"payload"`
}

// proposal encodes a Command in one pass: the same bytes as a Command whose
// Payload holds the payload's own encoding, without encoding it twice.
type proposal struct {
	Type    string    `json:"type"`
	At      time.Time `json:"at"`
	Payload any       `json:"payload"`
}

// handler applies one command to the state. It must be deterministic and must
// validate its payload: a returned error leaves the state unchanged.
type handler func(s *State, c Command) (any, error)

// handlers is the table of every command the FSM knows. Each area keeps its
// handlers in its own file; add a line here for a new command.
func handlers() map[string]handler {
	return map[string]handler{
		CmdSetSystemMode: applySetSystemMode,

		CmdBrowserClient:       applyBrowserClient,
		CmdBrowserCredentials:  applyBrowserCredentials,
		CmdBrowserEndpoints:    applyBrowserEndpoints,
		CmdBrowserActionResult: applyBrowserActionResult,
		CmdBrowserShellRuntime: applyBrowserShellRuntime,
		CmdBrowserActivity:     applyBrowserActivity,
		CmdBrowserSweep:        applyBrowserSweep,
		CmdRelaySave:           applyRelaySave,

		CmdPairCode:     applyPairCode,
		CmdPairRedeem:   applyPairRedeem,
		CmdPairRevoke:   applyPairRevoke,
		CmdPairScope:    applyPairScope,
		CmdPairRekey:    applyPairRekey,
		CmdPairRefusals: applyPairRefusals,

		CmdClusterMember: applyClusterMember,
		CmdClusterForget: applyClusterForget,
		CmdClusterLeader: applyClusterLeader,
		CmdClusterID:     applyClusterID,

		CmdConvLink:       applyConvLink,
		CmdConvMessage:    applyConvMessage,
		CmdConvExecution:  applyConvExecution,
		CmdConvClientLoop: applyConvClientLoop,
		CmdConvAutomation: applyConvAutomation,
		CmdConvRecover:    applyConvRecover,

		CmdTaskStart:   applyTaskStart,
		CmdTaskLog:     applyTaskLog,
		CmdTaskFinish:  applyTaskFinish,
		CmdTaskRecover: applyTaskRecover,

		CmdJobCreate:  applyJobCreate,
		CmdJobStart:   applyJobStart,
		CmdJobFinish:  applyJobFinish,
		CmdJobRecover: applyJobRecover,
		CmdTickRecord: applyTickRecord,
	}
}

// applyResult is what FSM.Apply returns through raft's ApplyFuture.
type applyResult struct {
	value any
	err   error
}

func decodePayload(c Command, dst any) error {
	if err := json.Unmarshal(c.Payload, dst); err != nil {
		return fmt.Errorf("%s: bad payload: %w", c.Type, err)
	}
	return nil
}
