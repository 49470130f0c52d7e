package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/svcd/svcd/supervisor/config"
)

func newClusterServer(t *testing.T, id string, bootstrap bool) (*Server, *httptest.Server) {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.SharedToken = "unit-test-token"
	cfg.NodeID = id
	cfg.RaftAddr = "127.0.0.1:0"
	cfg.Bootstrap = bootstrap
	s, err := New(context.Background(), cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("new server %s: %v", id, err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return s, hs
}

func authPost(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestClusterRoutesJoinListRemove(t *testing.T) {
	a, ha := newClusterServer(t, "a", true)
	b, hb := newClusterServer(t, "b", false)
	join := `{"id":"b","raft_addr":"` + b.Node().RaftAddr() + `"}`

	if code, body := authPost(t, ha.URL+"/v1/cluster/join", "", join); code != http.StatusUnauthorized {
		t.Fatalf("join without token = %d %s", code, body)
	}
	for _, bad := range []struct {
		body string
		code int
	}{
		{`{"id":"b"`, http.StatusBadRequest},
		{`{"id":"","raft_addr":"127.0.0.1:1"}`, http.StatusUnprocessableEntity},
		{`{"id":"b","raft_addr":"nope"}`, http.StatusUnprocessableEntity},
	} {
		if code, body := authPost(t, ha.URL+"/v1/cluster/join", "unit-test-token", bad.body); code != bad.code || !strings.Contains(body, `"ok":false`) {
			t.Fatalf("join %s = %d %s, want %d", bad.body, code, body, bad.code)
		}
	}
	// A standby refuses membership changes and names the leader.
	if code, body := authPost(t, hb.URL+"/v1/cluster/join", "unit-test-token", `{"id":"z","raft_addr":"127.0.0.1:1"}`); code != http.StatusServiceUnavailable || !strings.Contains(body, "not_leader") {
		t.Fatalf("join on a non-member = %d %s", code, body)
	}
	if code, body := authPost(t, ha.URL+"/v1/cluster/join", "unit-test-token", join); code != http.StatusOK {
		t.Fatalf("join = %d %s", code, body)
	}
	// The joined node replicates: a write on a shows on b.
	if code, body := post(t, ha.URL+"/v1/system/pause", `{"reason":"ha"}`); code != http.StatusOK {
		t.Fatalf("pause = %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.SystemState().Mode != "paused" {
		if time.Now().After(deadline) {
			t.Fatal("b never applied the write")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var view struct {
		Data struct {
			Role    string `json:"role"`
			Members []struct {
				ID   string `json:"id"`
				Role string `json:"role"`
			} `json:"members"`
		} `json:"data"`
	}
	_, body := get(t, hb.URL+"/v1/cluster")
	if err := json.Unmarshal([]byte(body), &view); err != nil || view.Data.Role != "standby" || len(view.Data.Members) != 2 {
		t.Fatalf("cluster on b = %s (%v)", body, err)
	}
	if code, body := authPost(t, ha.URL+"/v1/cluster/remove", "unit-test-token", `{"id":"ghost"}`); code != http.StatusNotFound {
		t.Fatalf("remove unknown = %d %s", code, body)
	}
	if code, body := authPost(t, ha.URL+"/v1/cluster/remove", "unit-test-token", `{"id":"b"}`); code != http.StatusOK || strings.Contains(body, `"id":"b"`) {
		t.Fatalf("remove = %d %s", code, body)
	}
	_ = a
}
