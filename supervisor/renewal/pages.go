package renewal

import (
	"strconv"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/pagecursor"
)

// Cursor names the last conversation of a page by its place in the
// order (updated_at, then local_conversation_id): the next page starts
// after it. It is opaque to clients (pagecursor of "<unix ns>", id).
type Cursor struct {
	at time.Time
	id string
}

func (c Cursor) String() string {
	return pagecursor.Encode(strconv.FormatInt(c.at.UnixNano(), 10), c.id)
}

// ParseCursor reads a next_cursor; false if s is not one.
func ParseCursor(s string) (Cursor, bool) {
	p, ok := pagecursor.Decode(s, 2)
	if !ok || !bridgeproto.ValidLocalConversationID(p[1]) {
		return Cursor{}, false
	}
	n, err := strconv.ParseInt(p[0], 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != p[0] {
		return Cursor{}, false
	}
	return Cursor{at: time.Unix(0, n).UTC(), id: p[1]}, true
}

// before says whether a comes before b in the list order: most recently
// updated first, ties by id.
func before(aAt time.Time, aID string, bAt time.Time, bID string) bool {
	if !aAt.Equal(bAt) {
		return aAt.After(bAt)
	}
	return aID < bID
}

// walk visits the conversations in list order after c (nil: from the
// start) through the FSM's recency index, so a page costs its own length.
func walk(st *raftstore.State, c *Cursor, fn func(cv *raftstore.Conversation) bool) {
	if c == nil {
		st.Conversations.Recent(time.Time{}, "", fn)
		return
	}
	st.Conversations.Recent(c.at, c.id, fn)
}

// Page is one page of the list, most recently updated first: at most limit
// records after the cursor (nil: from the start), the cursor of the next
// page ("" on the last one) and how many records there are in all. It
// copies only the page's records. A record updated while a client pages
// moves to the front, before the cursor: it is on no later page (a client
// that wants it again starts over); every record not updated meanwhile is
// on exactly one page.
func (s *Store) Page(limit int, after *Cursor) (out []raftstore.Conversation, next string, total int) {
	s.w.Read(func(st *raftstore.State) {
		total = len(st.Conversations.ByID)
		out = make([]raftstore.Conversation, 0, min(limit, total))
		walk(st, after, func(cv *raftstore.Conversation) bool {
			if len(out) == limit {
				last := out[len(out)-1]
				next = Cursor{at: last.UpdatedAt, id: last.LocalID}.String()
				return false
			}
			cp := *cv
			cp.Seen = nil
			out = append(out, cp)
			return true
		})
	})
	return out, next, total
}

// automationOf is the five fields of a linked conversation the plugins
// and the browser read model show.
func automationOf(c *raftstore.Conversation) bridgeproto.AutomationConversation {
	return bridgeproto.AutomationConversation{
		LocalConversationID: c.LocalID, RemoteConversationID: c.RemoteID, Platform: c.Platform,
		AutomationStatus: c.AutomationStatus, PauseReason: c.PauseReason,
	}
}

// Automation is every linked conversation's automation view (the plugins'
// state_snapshot.browser.automation_conversations), most recently updated
// first like List. It copies the five fields it needs, not every record
// whole, in the index's order (no sort).
func (s *Store) Automation() []bridgeproto.AutomationConversation {
	var out []bridgeproto.AutomationConversation
	s.w.Read(func(st *raftstore.State) {
		out = make([]bridgeproto.AutomationConversation, 0, len(st.Conversations.ByID))
		walk(st, nil, func(c *raftstore.Conversation) bool {
			if c.RemoteID != "" { // else never linked to a plugin conversation
				out = append(out, automationOf(c))
			}
			return true
		})
	})
	return out
}

// AutomationPage is one page of Automation (GET /v1/browser): at most
// limit linked conversations after the cursor (nil: from the start) and
// the cursor of the next page ("" on the last one).
func (s *Store) AutomationPage(limit int, after *Cursor) (out []bridgeproto.AutomationConversation, next *Cursor) {
	out = []bridgeproto.AutomationConversation{}
	s.w.Read(func(st *raftstore.State) {
		var last *raftstore.Conversation
		walk(st, after, func(c *raftstore.Conversation) bool {
			if c.RemoteID == "" {
				return true
			}
			if len(out) == limit {
				next = &Cursor{at: last.UpdatedAt, id: last.LocalID}
				return false
			}
			out, last = append(out, automationOf(c)), c
			return true
		})
	})
	return out, next
}
