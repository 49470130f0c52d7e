package cluster

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// A leader that dies in the middle of an SSE relay answer forwarded by a
// standby: the caller gets every event the leader finished, not the half
// one it was writing, and then a stream_error leader_unreachable naming its
// request — not a connection cut with no terminal event (chaos finding 1).
// A stream the leader ends normally passes through unchanged.
func TestForwardedStreamEndsWithStreamErrorWhenTheLeaderDies(t *testing.T) {
	node := leaderNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	whole := "event: stream_open\ndata: {\"requestId\":\"r-1\"}\n\nevent: stream_event\ndata: {\"requestId\":\"r-1\",\"seq\":1}\n\n"
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set(relayRequestIDHeader, "r-1")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, whole)
		if r.URL.Query().Get("die") == "" {
			_, _ = io.WriteString(w, "event: stream_end\ndata: {\"requestId\":\"r-1\",\"events\":1}\n\n")
			return
		}
		_, _ = io.WriteString(w, "event: stream_event\ndata: {\"requestId\":\"r-1\",\"se") // half an event
		_ = http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack() // the leader dies: its socket closes
		if err == nil {
			conn.Close()
		}
	}))
	defer leader.Close()
	if _, err := node.Apply(ctx, raftstore.CmdClusterLeader, raftstore.ClusterLeader{NodeID: "s1", APIAddr: strings.TrimPrefix(leader.URL, "http://")}); err != nil {
		t.Fatal(err)
	}
	standby := httptest.NewServer(http.HandlerFunc(New(Options{Node: node, NodeID: "s2"}).Forward))
	defer standby.Close()
	read := func(query string) (string, error) {
		resp, err := http.Post(standby.URL+"/v1/browser/request"+query, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		return b.String(), sc.Err()
	}
	got, err := read("?die=1")
	if err != nil {
		t.Fatalf("the caller's stream was cut: %v (read %q)", err, got)
	}
	if !strings.HasPrefix(got, whole) || strings.Contains(got, `"se`+"\n") {
		t.Fatalf("events before the death: %q", got)
	}
	tail := strings.TrimPrefix(got, whole)
	if !strings.HasPrefix(tail, "event: stream_error\ndata: {") || !strings.Contains(tail, `"code":"leader_unreachable"`) || !strings.Contains(tail, `"requestId":"r-1"`) || strings.Count(tail, "event:") != 1 {
		t.Fatalf("the stream did not end with one stream_error leader_unreachable: %q", tail)
	}
	got, err = read("")
	if err != nil || got != whole+"event: stream_end\ndata: {\"requestId\":\"r-1\",\"events\":1}\n\n" {
		t.Fatalf("a stream the leader ends: %v %q", err, got)
	}
}
