package codexrpc

import (
	"context"
	"encoding/json"
)

// The methods agentd uses, typed after the generated schema of the pinned
// Codex version (testdata/schema; see docs/agentd.md for the version).

// Thread is the part of a thread agentd keeps.
type Thread struct {
	ID string `json:"id"`
}

type threadResult struct {
	Thread Thread `json:"thread"`
}

// Turn is the part of a turn agentd keeps.
type Turn struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

type turnResult struct {
	Turn Turn `json:"turn"`
}

// StartThread runs thread/start in cwd.
func (c *Client) StartThread(ctx context.Context, cwd string) (Thread, error) {
	raw, err := c.Call(ctx, "thread/start", map[string]any{"cwd": cwd})
	return decodeThread(raw, err)
}

// ResumeThread runs thread/resume for a thread Codex persisted earlier.
func (c *Client) ResumeThread(ctx context.Context, threadID, cwd string) (Thread, error) {
	p := map[string]any{"threadId": threadID}
	if cwd != "" {
		p["cwd"] = cwd
	}
	raw, err := c.Call(ctx, "thread/resume", p)
	return decodeThread(raw, err)
}

func decodeThread(raw json.RawMessage, err error) (Thread, error) {
	if err != nil {
		return Thread{}, err
	}
	var r threadResult
	err = json.Unmarshal(raw, &r)
	return r.Thread, err
}

// StartTurn runs turn/start with one text input; the turn then streams as
// notifications.
func (c *Client) StartTurn(ctx context.Context, threadID, text string) (Turn, error) {
	raw, err := c.Call(ctx, "turn/start", map[string]any{"threadId": threadID,
		"input": []any{map[string]any{"type": "text", "text": text}}})
	if err != nil {
		return Turn{}, err
	}
	var r turnResult
	err = json.Unmarshal(raw, &r)
	return r.Turn, err
}

// InterruptTurn runs turn/interrupt.
func (c *Client) InterruptTurn(ctx context.Context, threadID, turnID string) error {
	_, err := c.Call(ctx, "turn/interrupt", map[string]any{"threadId": threadID, "turnId": turnID})
	return err
}

// ApprovalDecision is the answer agentd gives to command and file-change
// approval requests: "decline" (default) or "accept".
func ApprovalDecision(policy string) map[string]any {
	if policy == "accept" {
		return map[string]any{"decision": "accept"}
	}
	return map[string]any{"decision": "decline"}
}
