package renewal

import (
	"fmt"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/raftstoretest"
	"github.com/svcd/svcd/supervisor/statewrite"
)

// Paging through the conversations while others are linked and updated:
// pages keep List's order, a record not updated while paging is on exactly
// one page, no record is on two, and the walk ends with no next cursor.
func TestPagesHoldEveryRecordOnceWhileWritesGoOn(t *testing.T) {
	ctx := testCtx(t)
	s := New(statewrite.Writer{Node: raftstoretest.Node(t)})
	link := func(id string) {
		if _, err := s.Link(ctx, raftstore.ConvLink{LocalID: id, Platform: "platform_a", ClientID: "client-1", RemoteID: "r-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		link(fmt.Sprintf("c%03d", i))
	}
	// The first page is List's head.
	all := s.List()
	first, _, total := s.Page(9, nil)
	if total != 50 || len(first) != 9 {
		t.Fatalf("first page: %d records of %d", len(first), total)
	}
	for i := range first {
		if first[i].LocalID != all[i].LocalID {
			t.Fatalf("page order %d: %s, List says %s", i, first[i].LocalID, all[i].LocalID)
		}
	}
	seen, updated := map[string]int{}, map[string]bool{}
	var after *Cursor
	for pages := 0; ; pages++ {
		page, next, _ := s.Page(9, after)
		for i, c := range page {
			seen[c.LocalID]++
			if i > 0 && before(c.UpdatedAt, c.LocalID, page[i-1].UpdatedAt, page[i-1].LocalID) {
				t.Fatalf("page %d out of order at %d", pages, i)
			}
		}
		// Writes between pages: a new record, an update to one not yet
		// seen (it moves to the front) and to one already seen.
		link(fmt.Sprintf("new%02d", pages))
		for _, id := range []string{fmt.Sprintf("c%03d", (pages*17+3)%50), page[0].LocalID} {
			if _, err := s.SetStatus(ctx, id, raftstore.AutoAuto, ""); err != nil {
				t.Fatal(err)
			}
			updated[id] = true
		}
		if next == "" {
			break
		}
		cur, ok := ParseCursor(next)
		if !ok || cur.id != page[len(page)-1].LocalID {
			t.Fatalf("next cursor %q does not name the page's last record", next)
		}
		after = &cur
		if pages > 60 {
			t.Fatal("paging does not end")
		}
	}
	for i := 0; i < 50; i++ {
		id := fmt.Sprintf("c%03d", i)
		if seen[id] > 1 || (!updated[id] && seen[id] != 1) {
			t.Fatalf("%s (updated while paging: %v) seen %d times", id, updated[id], seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s seen %d times", id, n)
		}
	}
}

func TestCursorRoundTripAndRefusals(t *testing.T) {
	c := Cursor{at: time.Unix(1700000000, 123456789).UTC(), id: "conv-1"}
	got, ok := ParseCursor(c.String())
	if !ok || !got.at.Equal(c.at) || got.id != c.id {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	for _, bad := range []string{"", "!!", "bm90LWEtY3Vyc29y", Cursor{at: c.at, id: ""}.String(), "MTIzLg", "MDEyMy5jb252LTE"} {
		if _, ok := ParseCursor(bad); ok {
			t.Errorf("ParseCursor(%q) accepted", bad)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add(Cursor{at: time.Unix(1700000000, 5).UTC(), id: "conv-1"}.String())
	f.Add("")
	f.Add("MTIzLmM")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseCursor(s)
		if !ok {
			return
		}
		// What it accepts it writes back the same way.
		again, ok := ParseCursor(c.String())
		if !ok || !again.at.Equal(c.at) || again.id != c.id {
			t.Fatalf("%q: %+v does not round-trip", s, c)
		}
	})
}

// Automation holds the linked conversations in List's order, with the
// fields List has for them; a conversation never linked is not in it.
func TestAutomationIsTheLinkedPartOfList(t *testing.T) {
	ctx := testCtx(t)
	s := New(statewrite.Writer{Node: raftstoretest.Node(t)})
	for i := 0; i < 12; i++ {
		autoConv(t, s, fmt.Sprintf("c%02d", i))
	}
	if _, err := s.SetStatus(ctx, "never-linked", raftstore.AutoPaused, "why"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetStatus(ctx, "c03", raftstore.AutoPaused, "held"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range s.List() {
		if c.RemoteID != "" {
			want = append(want, fmt.Sprintf("%s %s %s %s %s", c.LocalID, c.RemoteID, c.Platform, c.AutomationStatus, c.PauseReason))
		}
	}
	var got []string
	for _, a := range s.Automation() {
		got = append(got, fmt.Sprintf("%s %s %s %s %s", a.LocalConversationID, a.RemoteConversationID, a.Platform, a.AutomationStatus, a.PauseReason))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 12 || got[0] != "c03 r-c03 platform_a paused held" {
		t.Fatalf("automation:\n%v\nlist says:\n%v", got, want)
	}
}
