package raftstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Refusal deltas add up per bucket and in total, survive a restart, are
// bounded (the least recently refused bucket goes), and a bad delta is
// refused without changing anything.
func TestPairRefusalsAddUpAndStayBounded(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	at := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	one := func(key string, count int64, at time.Time) Refusals {
		return Refusals{Key: key, Count: count, LastCode: "credential_invalid", LastReason: "credential unknown", LastRemote: "127.0.0.1", LastAt: at}
	}
	if _, err := n.Apply(ctx, CmdPairRefusals, PairRefusalsDelta{Total: one("", 3, at), Buckets: []Refusals{one("client:a", 3, at), one("remote:127.0.0.1", 3, at)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(ctx, CmdPairRefusals, PairRefusalsDelta{Total: one("", 2, at.Add(time.Second)), Buckets: []Refusals{one("client:b", 2, at.Add(time.Second)), one("remote:127.0.0.1", 2, at.Add(time.Second))}}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []PairRefusalsDelta{
		{Total: one("", 0, at)},
		{Total: one("", 1, at), Buckets: []Refusals{one("nobody", 1, at)}},
		{Total: one("", 1, at), Buckets: []Refusals{one("client:", 1, at)}},
		{Total: Refusals{Count: 1, LastReason: string(make([]byte, 400))}},
	} {
		if _, err := n.Apply(ctx, CmdPairRefusals, bad); err == nil {
			t.Fatalf("bad delta accepted: %+v", bad)
		}
	}
	check := func(n *Node) {
		t.Helper()
		n.Read(func(s *State) {
			if s.Pairing.RefusedTotal.Count != 5 || !s.Pairing.RefusedTotal.LastAt.Equal(at.Add(time.Second)) {
				t.Fatalf("total %+v", s.Pairing.RefusedTotal)
			}
			if s.Pairing.Refused["client:a"].Count != 3 || s.Pairing.Refused["client:b"].Count != 2 || s.Pairing.Refused["remote:127.0.0.1"].Count != 5 {
				t.Fatalf("buckets %+v", s.Pairing.Refused)
			}
		})
	}
	check(n)
	n.Shutdown()
	n = openTestNode(t, dir)
	defer n.Shutdown()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	check(n)

	// Past the bound the oldest buckets go; the total keeps counting.
	for i := 0; i < MaxRefusalBuckets; i++ {
		key := fmt.Sprintf("remote:10.0.0.%d", i)
		if _, err := n.Apply(ctx, CmdPairRefusals, PairRefusalsDelta{Total: one("", 1, at.Add(time.Hour)), Buckets: []Refusals{one(key, 1, at.Add(time.Hour))}}); err != nil {
			t.Fatal(err)
		}
	}
	n.Read(func(s *State) {
		if len(s.Pairing.Refused) != MaxRefusalBuckets || s.Pairing.Refused["client:a"] != nil || s.Pairing.RefusedTotal.Count != 5+MaxRefusalBuckets {
			t.Fatalf("bound: %d buckets, client:a %v, total %d", len(s.Pairing.Refused), s.Pairing.Refused["client:a"], s.Pairing.RefusedTotal.Count)
		}
	})
}
