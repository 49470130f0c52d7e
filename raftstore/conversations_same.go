package raftstore

import "slices"

// Same says whether c and o hold the same values in every field (a
// client loop by its content, not its pointer): the list route keeps a
// conversation's JSON while the record is the Same as when it was
// encoded (shared/jsoncache). A field added to Conversation or
// ClientLoop must be compared here: TestConversationSameSeesEveryField
// fails until it is.
func (c *Conversation) Same(o *Conversation) bool {
	if (c.ClientLoop == nil) != (o.ClientLoop == nil) || c.ClientLoop != nil && *c.ClientLoop != *o.ClientLoop {
		return false
	}
	return c.LocalID == o.LocalID && c.Platform == o.Platform && c.ClientID == o.ClientID && c.RemoteID == o.RemoteID &&
		c.URL == o.URL && c.Title == o.Title && c.AutomationStatus == o.AutomationStatus && c.PauseReason == o.PauseReason &&
		c.LastError == o.LastError && c.ExecutionState == o.ExecutionState &&
		c.ConsecutiveFailureCount == o.ConsecutiveFailureCount && c.RepeatedMessageCount == o.RepeatedMessageCount &&
		c.RepeatedRenewalCount == o.RepeatedRenewalCount && c.LastNonPausedAutomationStatus == o.LastNonPausedAutomationStatus &&
		c.LastMessageID == o.LastMessageID &&
		// == on time.Time: the same instant in another location (or with
		// another monotonic reading) is not the Same; it may encode apart.
		c.LastAIMessageAt == o.LastAIMessageAt && c.LinkedAt == o.LinkedAt && c.CreatedAt == o.CreatedAt && c.UpdatedAt == o.UpdatedAt &&
		(c.Seen == nil) == (o.Seen == nil) && slices.Equal(c.Seen, o.Seen)
}

// Clone is a copy of c that shares nothing with it (the FSM changes its
// records in place).
func (c *Conversation) Clone() Conversation {
	out := *c
	out.Seen = slices.Clone(c.Seen)
	if c.ClientLoop != nil {
		l := *c.ClientLoop
		out.ClientLoop = &l
	}
	return out
}
