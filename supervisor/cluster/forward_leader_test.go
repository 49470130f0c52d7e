package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// A leader that takes the forwarded call and never answers (cut off by a
// partition, chaos finding 8): once this node sees another leader, the
// forward ends with 503 leader_unreachable saying the write's outcome is
// unknown, instead of holding the caller until its own timeout.
func TestForwardEndsWhenTheLeaderMovesWhileItWaits(t *testing.T) {
	node := leaderNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reached := make(chan struct{}, 1)
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		select { // the partitioned leader: no answer
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(release)
	record := func(api string) {
		t.Helper()
		if _, err := node.Apply(ctx, raftstore.CmdClusterLeader, raftstore.ClusterLeader{NodeID: "s1", APIAddr: api}); err != nil {
			t.Fatal(err)
		}
	}
	record(strings.TrimPrefix(silent.URL, "http://"))
	standby := httptest.NewServer(http.HandlerFunc(New(Options{Node: node, NodeID: "s2"}).Forward))
	defer standby.Close()

	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		client := &http.Client{Timeout: 8 * time.Second}
		resp, err := client.Post(standby.URL+"/v1/system/mode", "application/json", strings.NewReader(`{"mode":"paused"}`))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		var env struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&env)
		done <- result{code: resp.StatusCode, body: env.Error.Code + ": " + env.Error.Message}
	}()
	<-reached
	moved := time.Now()
	record("127.0.0.1:1") // this node now sees the leader elsewhere
	r := <-done
	if r.err != nil {
		t.Fatalf("the caller got no answer: %v", r.err)
	}
	if r.code != http.StatusServiceUnavailable || !strings.HasPrefix(r.body, "leader_unreachable: ") || !strings.Contains(r.body, "may or may not have been applied") {
		t.Fatalf("%d %s, want 503 leader_unreachable saying the outcome is unknown", r.code, r.body)
	}
	if took := time.Since(moved); took > 3*time.Second {
		t.Fatalf("the forward ended %v after the leader moved", took)
	}
}

// The error body says why.
func TestForwardLeaderMovedMessage(t *testing.T) {
	e := &leaderMoved{id: "n1", addr: "10.0.0.1:4317", now: "no leader known"}
	if !strings.Contains(e.Error(), "no longer sees it lead (no leader known)") {
		t.Fatal(e.Error())
	}
}
