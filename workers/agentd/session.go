package agentd

import "time"

// Session is one agent conversation: a Codex thread plus agentd's read-back
// of its last turn.
type Session struct {
	SessionID        string    `json:"sessionId"`
	Cwd              string    `json:"cwd"`
	Purpose          string    `json:"purpose"`
	Status           string    `json:"status"` // idle | running
	ThreadID         string    `json:"threadId"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	LastTurnID       string    `json:"lastTurnId,omitempty"`
	LastTurnStatus   string    `json:"lastTurnStatus,omitempty"` // running | completed | interrupted | failed
	LastTurnInput    string    `json:"lastTurnInput,omitempty"`
	LastTurnOutput   string    `json:"lastTurnOutput,omitempty"`
	LastTurnError    string    `json:"lastTurnError,omitempty"`
	LastTurnStarted  time.Time `json:"lastTurnStarted,omitzero"`
	LastTurnFinished time.Time `json:"lastTurnFinished,omitzero"`
	RecentEvents     []Event   `json:"recentEvents"`
}

// Event is one thing that happened, as sent on the event stream and kept
// (bounded) in a session's recentEvents.
type Event struct {
	Type      string    `json:"type"` // a Codex notification method, or agentd/<what>
	SessionID string    `json:"sessionId,omitempty"`
	TurnID    string    `json:"turnId,omitempty"`
	Delta     string    `json:"delta,omitempty"`
	Message   string    `json:"message,omitempty"`
	At        time.Time `json:"at"`
}

// maxRecentEvents bounds each session's recentEvents.
const maxRecentEvents = 32

func (s *Session) addEvent(e Event) {
	if e.Type == "item/agentMessage/delta" {
		return // deltas go to the stream and lastTurnOutput, not the bounded list
	}
	s.RecentEvents = append(s.RecentEvents, e)
	if n := len(s.RecentEvents); n > maxRecentEvents {
		s.RecentEvents = append([]Event(nil), s.RecentEvents[n-maxRecentEvents:]...)
	}
}

func (s *Session) clone() Session {
	c := *s
	c.RecentEvents = append([]Event{}, s.RecentEvents...)
	return c
}
