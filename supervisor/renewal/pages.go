package renewal

import (
	"container/heap"
	"encoding/base64"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Cursor names the last conversation of a page by its place in the
// order (updated_at, then local_conversation_id): the next page starts
// after it. It is opaque to clients (base64url of "<unix ns>.<id>").
type Cursor struct {
	at time.Time
	id string
}

func (c Cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.at.UnixNano(), 10) + "." + c.id))
}

// ParseCursor reads a next_cursor; false if s is not one.
func ParseCursor(s string) (Cursor, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, false
	}
	ns, id, ok := strings.Cut(string(raw), ".")
	if !ok || !bridgeproto.ValidLocalConversationID(id) {
		return Cursor{}, false
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != ns {
		return Cursor{}, false
	}
	return Cursor{at: time.Unix(0, n).UTC(), id: id}, true
}

// before says whether a comes before b in the list order: most recently
// updated first, ties by id.
func before(aAt time.Time, aID string, bAt time.Time, bID string) bool {
	if !aAt.Equal(bAt) {
		return aAt.After(bAt)
	}
	return aID < bID
}

// Page is one page of the list, most recently updated first: at most limit
// records after the cursor (nil: from the start), the cursor of the next
// page ("" on the last one) and how many records there are in all. It keeps
// the limit+1 first records in a heap while it walks the area, and copies
// only those: no sort and no copy of every record per request. A record
// updated while a client pages moves to the front, before the cursor: it is
// on no later page (a client that wants it again starts over); every record
// not updated meanwhile is on exactly one page.
func (s *Store) Page(limit int, after *Cursor) (out []raftstore.Conversation, next string, total int) {
	h := &pageHeap{}
	s.w.Read(func(st *raftstore.State) {
		total = len(st.Conversations.ByID)
		for _, c := range st.Conversations.ByID {
			if after != nil && !before(after.at, after.id, c.UpdatedAt, c.LocalID) {
				continue
			}
			if h.Len() <= limit {
				heap.Push(h, c)
			} else if before(c.UpdatedAt, c.LocalID, (*h)[0].UpdatedAt, (*h)[0].LocalID) {
				(*h)[0] = c
				heap.Fix(h, 0)
			}
		}
		more := h.Len() > limit
		if more {
			heap.Pop(h) // the limit+1-th: only says there is a next page
		}
		out = make([]raftstore.Conversation, h.Len())
		for i := len(out) - 1; i >= 0; i-- {
			cp := *heap.Pop(h).(*raftstore.Conversation)
			cp.Seen = nil
			out[i] = cp
		}
		if more {
			last := out[len(out)-1]
			next = Cursor{at: last.UpdatedAt, id: last.LocalID}.String()
		}
	})
	return out, next, total
}

// pageHeap keeps the page's records with the last in order on top.
type pageHeap []*raftstore.Conversation

func (h pageHeap) Len() int { return len(h) }
func (h pageHeap) Less(i, j int) bool {
	return before(h[j].UpdatedAt, h[j].LocalID, h[i].UpdatedAt, h[i].LocalID)
}
func (h pageHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pageHeap) Push(x any)   { *h = append(*h, x.(*raftstore.Conversation)) }
func (h *pageHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Automation is every linked conversation's automation view (the plugins'
// state_snapshot.browser.automation_conversations and GET /v1/browser),
// most recently updated first like List. It copies the five fields it
// needs, not every record whole: with thousands of conversations this runs
// on every state_snapshot push and every read of the browser model.
func (s *Store) Automation() []bridgeproto.AutomationConversation {
	type entry struct {
		at time.Time
		v  bridgeproto.AutomationConversation
	}
	var all []entry
	s.w.Read(func(st *raftstore.State) {
		all = make([]entry, 0, len(st.Conversations.ByID))
		for _, c := range st.Conversations.ByID {
			if c.RemoteID == "" {
				continue // never linked to a plugin conversation
			}
			all = append(all, entry{c.UpdatedAt, bridgeproto.AutomationConversation{
				LocalConversationID: c.LocalID, RemoteConversationID: c.RemoteID, Platform: c.Platform,
				AutomationStatus: c.AutomationStatus, PauseReason: c.PauseReason,
			}})
		}
	})
	sort.Slice(all, func(i, j int) bool {
		return before(all[i].at, all[i].v.LocalConversationID, all[j].at, all[j].v.LocalConversationID)
	})
	out := make([]bridgeproto.AutomationConversation, len(all))
	for i, e := range all {
		out[i] = e.v
	}
	return out
}
