package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/svcd/svcd/raftstore"
)

// authGet is a GET of u with the test server's token: status and body.
func authGet(t *testing.T, u string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer unit-test-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func authJSON(t *testing.T, u string, v any) int {
	t.Helper()
	code, b := authGet(t, u)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %d %s", u, code, b)
	}
	return code
}

// GET /v1/tasks and /v1/renewal/conversations page with limit and cursor:
// following next_cursor visits every record once and ends without one; a
// cursor that is not one is a 422 invalid_cursor.
func TestListRoutesPageWithCursors(t *testing.T) {
	s, hs := newTestServer(t)
	ctx := context.Background()
	for i := 0; i < 23; i++ {
		if _, _, err := s.tasks.Start(ctx, "instruction_batch", "", ""); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("conv-%d", i)
		if _, err := s.convs.Link(ctx, raftstore.ConvLink{LocalID: id, Platform: "platform_a", ClientID: "c", RemoteID: "r" + id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ path, list, key string }{
		{"/v1/tasks", "tasks", "task_id"}, {"/v1/renewal/conversations", "conversations", "local_conversation_id"},
	} {
		seen := map[string]int{}
		cursor := ""
		for pages := 0; ; pages++ {
			u := hs.URL + c.path + "?limit=5"
			if cursor != "" {
				u += "&cursor=" + url.QueryEscape(cursor)
			}
			var body struct {
				Data map[string]json.RawMessage `json:"data"`
			}
			if code := authJSON(t, u, &body); code != 200 {
				t.Fatalf("%s: %d", u, code)
			}
			var items []map[string]any
			json.Unmarshal(body.Data[c.list], &items)
			for _, it := range items {
				seen[fmt.Sprint(it[c.key])]++
			}
			next, ok := body.Data["next_cursor"]
			if !ok {
				if len(items) != 3 {
					t.Fatalf("%s: last page holds %d", c.path, len(items))
				}
				break
			}
			if len(items) != 5 || pages > 10 {
				t.Fatalf("%s page %d: %d items", c.path, pages, len(items))
			}
			json.Unmarshal(next, &cursor)
		}
		if len(seen) != 23 {
			t.Fatalf("%s: %d distinct records over the pages, want 23", c.path, len(seen))
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("%s: %s on %d pages", c.path, k, n)
			}
		}
		for _, bad := range []string{"", "nope", "task-0", "%21%21"} {
			var body struct {
				OK    bool `json:"ok"`
				Error struct{ Code string }
			}
			if code := authJSON(t, hs.URL+c.path+"?cursor="+bad, &body); code != 422 || body.OK || body.Error.Code != "invalid_cursor" {
				t.Errorf("%s?cursor=%s: %d %+v, want 422 invalid_cursor", c.path, bad, code, body)
			}
		}
	}
}
