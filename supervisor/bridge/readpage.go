package bridge

import (
	"strings"

	"github.com/svcd/svcd/supervisor/pagecursor"
)

// Paging of GET /v1/browser. Two lists grow with the state: records (in key
// order) and automation_conversations (most recently updated first). A page
// holds at most Limit of each; next_cursor carries where each list stopped,
// so one cursor walks both and ends (no next_cursor) when both are done.
// policy.targets on a page holds the targets whose key falls in the page's
// range of record keys, so following next_cursor visits each target once.

// Default and largest page (the limit query parameter).
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 1000
)

// Page selects one page; Limit 0 means everything (the panel and the
// pairing routes read the whole model in this process).
type Page struct {
	Limit int
	After Cursor
}

// Cursor is where the previous page stopped in each list. The zero Cursor
// is the first page.
type Cursor struct {
	records    listPos
	automation listPos
}

// listPos is a place in one list: from its start (zero), after an item, or
// past its end.
type listPos struct {
	done  bool
	after string // a record key, or the renewal store's cursor
}

// Markers of a listPos inside the cursor.
const (
	posStart = ""
	posDone  = "="
	posAfter = ">"
)

func (p listPos) String() string {
	switch {
	case p.done:
		return posDone
	case p.after == "":
		return posStart
	}
	return posAfter + p.after
}

func parsePos(s string) (listPos, bool) {
	switch {
	case s == posStart:
		return listPos{}, true
	case s == posDone:
		return listPos{done: true}, true
	case strings.HasPrefix(s, posAfter) && len(s) > len(posAfter):
		return listPos{after: s[len(posAfter):]}, true
	}
	return listPos{}, false
}

func (c Cursor) String() string {
	return pagecursor.Encode(c.records.String(), c.automation.String())
}

// AutomationAfter is the automation list's cursor ("" at the start or past
// the end), for the caller to check with the renewal store's parser.
func (c Cursor) AutomationAfter() string { return c.automation.after }

// ParseCursor reads a next_cursor of GET /v1/browser; false if s is not one.
// validAutomation checks the automation part (the renewal store's cursor).
func ParseCursor(s string, validAutomation func(string) bool) (Cursor, bool) {
	parts, ok := pagecursor.Decode(s, 2)
	if !ok {
		return Cursor{}, false
	}
	rec, ok1 := parsePos(parts[0])
	auto, ok2 := parsePos(parts[1])
	if !ok1 || !ok2 || (auto.after != "" && !validAutomation(auto.after)) {
		return Cursor{}, false
	}
	if rec.done && auto.done {
		return Cursor{}, false // no page follows the last one
	}
	return Cursor{records: rec, automation: auto}, true
}
