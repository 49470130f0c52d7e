package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
)

type errBody struct {
	OK    bool `json:"ok"`
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

func forwardOnce(t *testing.T, c *Cluster, hdr map[string]string) (int, errBody) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(c.Forward))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/system/pause", strings.NewReader(`{"reason":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b errBody
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	return resp.StatusCode, b
}

// leaderNode is a one-node raft store that has become its own leader,
// shut down when the test ends.
func leaderNode(t *testing.T) *raftstore.Node {
	t.Helper()
	node, err := raftstore.Open(raftstore.Config{NodeID: "s1", DataDir: t.TempDir(), Bootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return node
}

// A standby that does not know the leader's API address answers 503
// no_leader with a retry hint instead of guessing; a call another node has
// already forwarded is never forwarded a second time (no loops between two
// standbys that disagree about the leader).
func TestForwardRefusesWithoutALeaderAndNeverTwice(t *testing.T) {
	node, err := raftstore.Open(raftstore.Config{NodeID: "s1", DataDir: t.TempDir()}) // not bootstrapped: no leader
	if err != nil {
		t.Fatal(err)
	}
	defer node.Shutdown()
	c := New(Options{Node: node, NodeID: "s1"})

	code, b := forwardOnce(t, c, nil)
	if code != http.StatusServiceUnavailable || b.OK || b.Error.Code != "no_leader" || b.Error.Details["retry_after_ms"] == nil {
		t.Fatalf("no leader: %d %+v", code, b)
	}
	code, b = forwardOnce(t, c, map[string]string{ForwardedByHeader: "s2"})
	if code != http.StatusServiceUnavailable || b.Error.Code != "not_leader" || !strings.Contains(b.Error.Message, "s2") {
		t.Fatalf("second hop: %d %+v", code, b)
	}
}

// With the leader's API address recorded in the FSM, a forwarded call reaches
// it with the caller's Authorization and body, marked as forwarded, without
// the Origin/Sec-Fetch headers this node's guard already judged; the
// leader's answer comes back unchanged. A leader that cannot be reached is a
// 503 leader_unreachable naming it.
func TestForwardKeepsAuthorizationAndNamesAnUnreachableLeader(t *testing.T) {
	node := leaderNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type seen struct{ auth, origin, site, by, body string }
	got := make(chan seen, 1)
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"), r.Header.Get(ForwardedByHeader), string(b)}
		w.Header().Set(ServedByHeader, "s1")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"data":{"from":"leader"}}`)
	}))
	defer leader.Close()
	record := func(api string) {
		t.Helper()
		if _, err := node.Apply(ctx, raftstore.CmdClusterLeader, raftstore.ClusterLeader{NodeID: "s1", APIAddr: api}); err != nil {
			t.Fatal(err)
		}
	}
	record(strings.TrimPrefix(leader.URL, "http://"))
	c := New(Options{Node: node, NodeID: "s2"})
	code, _ := forwardOnce(t, c, map[string]string{"Authorization": "Bearer tok", "Origin": "http://127.0.0.1:4317", "Sec-Fetch-Site": "same-origin"})
	s := <-got
	if code != http.StatusOK || s.auth != "Bearer tok" || s.origin != "" || s.site != "" || s.by != "s2" || s.body != `{"reason":"x"}` {
		t.Fatalf("forwarded: %d %+v", code, s)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	record(dead)
	code, b := forwardOnce(t, c, nil)
	if code != http.StatusServiceUnavailable || b.Error.Code != "leader_unreachable" || b.Error.Details["leader_api"] != dead {
		t.Fatalf("unreachable leader: %d %+v", code, b)
	}
}
