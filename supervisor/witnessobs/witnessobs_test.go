package witnessobs

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/svcd/svcd/raftstore"
)

type fakeNode struct {
	leader string
	member bool
}

func (f *fakeNode) Role() raftstore.RoleInfo {
	return raftstore.RoleInfo{NodeID: "w", RaftState: "Follower", LeaderID: f.leader, Term: 7, LastIndex: 12, AppliedIdx: 11}
}
func (f *fakeNode) IsLeader() bool { return false }
func (f *fakeNode) IsMember() bool { return f.member }
func (f *fakeNode) Progress() raftstore.Progress {
	return raftstore.Progress{AppliedIndex: 11, CommitIndex: 12}
}

func get(t *testing.T, h http.Handler, path, host string) (int, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = host
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// /readyz is 503 no_leader until the witness is a member that knows a
// leader; /metrics carries the raft series by the daemon's names; a foreign
// Host is refused.
func TestWitnessListener(t *testing.T) {
	const listen = "127.0.0.1:4320"
	n := &fakeNode{}
	h := Handler(listen, n, "0.1.0-test")
	if code, body := get(t, h, "/healthz", listen); code != 200 || body != "ok" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, h, "/readyz", listen); code != 503 || !strings.Contains(body, `"code":"no_leader"`) {
		t.Fatalf("/readyz without a leader = %d %s", code, body)
	}
	n.leader, n.member = "n1", true
	if code, body := get(t, h, "/readyz", listen); code != 200 || !strings.Contains(body, `"leader_id":"n1"`) || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("/readyz with a leader = %d %s", code, body)
	}
	code, body := get(t, h, "/metrics", listen)
	for _, want := range []string{"svcd_raft_leader 0", "svcd_raft_term 7", "svcd_raft_last_index 12", "svcd_raft_commit_lag_entries 1", `svcd_witness_info{version="0.1.0-test"} 1`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q (%d)", want, code)
		}
	}
	if code, _ := get(t, h, "/metrics", "evil.example"); code < 400 {
		t.Errorf("foreign Host = %d", code)
	}
}
