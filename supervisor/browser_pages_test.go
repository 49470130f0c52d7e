package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/svcd/svcd/raftstore"
)

// browserPage is the part of GET /v1/browser a pager reads.
type browserPage struct {
	OK   bool `json:"ok"`
	Data struct {
		Records []struct {
			Key string `json:"key"`
		} `json:"records"`
		AutomationConversations []struct {
			ID string `json:"local_conversation_id"`
		} `json:"automation_conversations"`
		Policy struct {
			Targets map[string]json.RawMessage `json:"targets"`
		} `json:"policy"`
		Summary struct {
			Records int `json:"records"`
		} `json:"summary"`
		NextCursor *string `json:"next_cursor"`
	} `json:"data"`
	Error struct{ Code string } `json:"error"`
}

func addBrowserRecord(t *testing.T, s *Server, client, account string) string {
	t.Helper()
	ref := raftstore.RecordRef{ClientID: client, Browser: "chromium", Platform: "platform_a", Account: account, Host: "a.example.test"}
	if _, err := s.node.Apply(context.Background(), raftstore.CmdBrowserCredentials, raftstore.BrowserCredentials{RecordRef: ref,
		Fingerprint: "sha256:" + strings.Repeat("0f", 32), HeaderNames: []string{"authorization"}, HeaderCount: 1}); err != nil {
		t.Fatal(err)
	}
	return raftstore.RecordKey(client, "platform_a", account)
}

// GET /v1/browser pages records (key order) and automation_conversations
// (most recently updated first) with limit and cursor while records and
// conversations are added between pages: every record and conversation
// that was there from the start is on exactly one page, nothing is on two,
// each page's records are in key order after the previous page's, every
// record's target is in policy.targets of exactly one page, and the walk
// ends without a next_cursor. Without a cursor an old client gets the
// first page and a next_cursor.
func TestBrowserReadModelPagesWithCursors(t *testing.T) {
	s, hs := newTestServer(t)
	ctx := context.Background()
	before := map[string]bool{}
	for i := 0; i < 23; i++ {
		before[addBrowserRecord(t, s, fmt.Sprintf("client-%d", i%4), fmt.Sprintf("user%02d@example.test", i))] = true
	}
	convs := map[string]bool{}
	for i := 0; i < 17; i++ {
		id := fmt.Sprintf("conv-%d", i)
		if _, err := s.convs.Link(ctx, raftstore.ConvLink{LocalID: id, Platform: "platform_a", ClientID: "client-0", RemoteID: "r" + id}); err != nil {
			t.Fatal(err)
		}
		convs[id] = true
	}
	var first browserPage
	if code := authJSON(t, hs.URL+"/v1/browser", &first); code != 200 || len(first.Data.Records) != 23 || first.Data.NextCursor != nil {
		t.Fatalf("default page: %d, %d records, next %v (the default limit, 50, holds them all)", code, len(first.Data.Records), first.Data.NextCursor)
	}
	seen, seenConv, targets := map[string]int{}, map[string]int{}, map[string]int{}
	cursor, lastKey := "", ""
	for pages := 0; ; pages++ {
		u := hs.URL + "/v1/browser?limit=5"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var p browserPage
		if code := authJSON(t, u, &p); code != 200 {
			t.Fatalf("%s: %d %+v", u, code, p.Error)
		}
		if len(p.Data.Records) > 5 || len(p.Data.AutomationConversations) > 5 || pages > 20 {
			t.Fatalf("page %d: %d records, %d conversations", pages, len(p.Data.Records), len(p.Data.AutomationConversations))
		}
		if p.Data.Summary.Records < 23 {
			t.Fatalf("page %d: summary counts %d records, want every one", pages, p.Data.Summary.Records)
		}
		for _, r := range p.Data.Records {
			if r.Key <= lastKey {
				t.Fatalf("page %d: %s after %s", pages, r.Key, lastKey)
			}
			lastKey = r.Key
			seen[r.Key]++
		}
		for _, c := range p.Data.AutomationConversations {
			seenConv[c.ID]++
		}
		for k := range p.Data.Policy.Targets {
			targets[k]++
		}
		// Writes between pages: a record before the cursor, one after it,
		// a new conversation (it goes to the front of its list).
		addBrowserRecord(t, s, "client-0", fmt.Sprintf("aaa%02d@example.test", pages))
		addBrowserRecord(t, s, "client-3", fmt.Sprintf("zzz%02d@example.test", pages))
		if _, err := s.convs.Link(ctx, raftstore.ConvLink{LocalID: fmt.Sprintf("new-%d", pages), Platform: "platform_a", ClientID: "client-1", RemoteID: "n"}); err != nil {
			t.Fatal(err)
		}
		if p.Data.NextCursor == nil {
			break
		}
		cursor = *p.Data.NextCursor
	}
	for k := range before {
		if seen[k] != 1 || targets[k] != 1 {
			t.Errorf("record %s on %d pages, its target on %d", k, seen[k], targets[k])
		}
	}
	for k, n := range seen {
		if n != 1 || targets[k] != 1 {
			t.Errorf("record %s on %d pages, its target on %d", k, n, targets[k])
		}
	}
	for id := range convs {
		if seenConv[id] != 1 {
			t.Errorf("conversation %s on %d pages", id, seenConv[id])
		}
	}
	for id, n := range seenConv {
		if n != 1 {
			t.Errorf("conversation %s on %d pages", id, n)
		}
	}
	// Filters page too: one client's records, in key order, all of them.
	var keys []string
	cursor = ""
	for {
		u := hs.URL + "/v1/browser?limit=2&client_id=client-2"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var p browserPage
		authJSON(t, u, &p)
		for _, r := range p.Data.Records {
			keys = append(keys, r.Key)
		}
		if p.Data.NextCursor == nil {
			break
		}
		cursor = *p.Data.NextCursor
	}
	if len(keys) != 6 || !sort.StringsAreSorted(keys) || !strings.Contains(keys[0], "/client-2/") {
		t.Fatalf("client-2's records over pages of 2: %v", keys)
	}
	for _, c := range []struct {
		query, code string
		status      int
	}{
		{"cursor=", "invalid_cursor", 422}, {"cursor=nope", "invalid_cursor", 422}, {"cursor=%21%21", "invalid_cursor", 422},
		{"cursor=task-3", "invalid_cursor", 422}, // a task cursor is no browser cursor
		{"limit=0", "invalid_query", 422}, {"limit=1001", "invalid_query", 422}, {"limit=x", "invalid_query", 400},
	} {
		var p browserPage
		if code := authJSON(t, hs.URL+"/v1/browser?"+c.query, &p); code != c.status || p.OK || p.Error.Code != c.code {
			t.Errorf("/v1/browser?%s: %d %+v, want %d %s", c.query, code, p.Error, c.status, c.code)
		}
	}
}
