package bridge

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/raftstoretest"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// raftHost is a hub host over a real single-node raft store that counts
// the refusal flushes it is asked to apply.
type raftHost struct {
	nopHost
	n       *raftstore.Node
	flushes atomic.Int64
}

func newRaftHost(t *testing.T) *raftHost { return &raftHost{n: raftstoretest.Node(t)} }

func (r *raftHost) Apply(ctx context.Context, typ string, payload any) (any, error) {
	if typ == raftstore.CmdPairRefusals {
		r.flushes.Add(1)
	}
	return r.n.Apply(ctx, typ, payload)
}
func (r *raftHost) Read(fn func(*raftstore.State)) { r.n.Read(fn) }

// A flood of refused hellos costs at most one raft command per flush
// period; the counts (total, per client, per address) are durable: a new
// hub over the same store (a restarted daemon, a new leader) shows them.
func TestRefusedPairingsAreDurableAndBatched(t *testing.T) {
	host := newRaftHost(t)
	h, url := startTestHubOn(t, Config{PairingFailures: 1000, RefusalFlush: 200 * time.Millisecond}, host)
	start := time.Now()
	const n = 60
	for i := 0; i < n; i++ {
		id := "flood"
		if i%2 == 1 {
			id = "other"
		}
		if code, _ := helloRefusal(t, url, bridgeproto.Hello{Type: bridgeproto.TypeHello, Credential: "svcb_WRONG", ClientID: id}); code != bridgeproto.ErrCredentialInvalid {
			t.Fatalf("attempt %d: %s", i, code)
		}
	}
	if st := h.RefusedPairings(); st.Count != n {
		t.Fatalf("before the flush: %+v", st)
	}
	waitFor(t, 5*time.Second, func() bool {
		var c int64
		host.n.Read(func(s *raftstore.State) { c = s.Pairing.RefusedTotal.Count })
		return c == n
	})
	if st := h.RefusedPairings(); st.Count != n || st.Unflushed != 0 {
		t.Fatalf("after the flush reached raft: %+v, want count %d, none unflushed", st, n)
	}
	periods := time.Since(start)/(200*time.Millisecond) + 2
	if f := host.flushes.Load(); f > int64(periods) {
		t.Fatalf("%d refusals made %d raft commands in %s (at most one per 200ms flush period: %d)", n, f, time.Since(start), periods)
	}
	t.Logf("%d refusals, %d raft commands", n, host.flushes.Load())

	// Another hub over the same store: the counts are there, with buckets.
	h2 := New(Config{}, host, h.log)
	st := h2.RefusedPairings()
	if st.Count != n || st.LastCode != bridgeproto.ErrCredentialInvalid || st.LastRemote != "127.0.0.1" {
		t.Fatalf("after restart: %+v", st)
	}
	got := map[string]int64{}
	for _, b := range st.Recent {
		got[b.Key] = b.Count
		if strings.Contains(b.LastReason, "WRONG") {
			t.Fatal("a stored reason quotes what the client sent")
		}
	}
	if got["client:flood"] != n/2 || got["client:other"] != n/2 || got["remote:127.0.0.1"] != n {
		t.Fatalf("buckets %v", got)
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
