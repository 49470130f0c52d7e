package supervisor

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/systemstate"
)

// The kept system state answer is byte for byte what api.WriteOK writes for
// the state now, and a write is in the very next read (read-your-writes).
func TestSystemStateAnswerFollowsWrites(t *testing.T) {
	s, hs := newTestServer(t)
	fresh := func() string {
		rec := httptest.NewRecorder()
		api.WriteOK(rec, s.SystemState())
		return rec.Body.String()
	}
	for i := 0; i < 2; i++ { // built, then reused
		code, body := get(t, hs.URL+"/v1/system/state")
		if code != 200 || body != fresh() {
			t.Fatalf("read %d: %d %s, want %s", i, code, body, fresh())
		}
	}
	for i, mode := range []string{"paused", "draining", "running", "paused"} {
		code, wbody := post(t, hs.URL+"/v1/system/"+map[string]string{"paused": "pause", "draining": "drain", "running": "resume"}[mode], `{"reason":"r`+mode+`"}`)
		if code != 200 {
			t.Fatalf("write %s: %d %s", mode, code, wbody)
		}
		code, body := get(t, hs.URL+"/v1/system/state")
		var got struct {
			Data systemstate.State `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 {
			t.Fatalf("read after %s: %d %s %v", mode, code, body, err)
		}
		if got.Data.Mode != mode || got.Data.Reason != "r"+mode || got.Data.Version != uint64(i+1) || body != wbody || body != fresh() {
			t.Fatalf("read after %s: %s\nwrite answered %s", mode, body, wbody)
		}
	}
}
