package bridge

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
)

// TestSummaryCountsMatchAFullWalk: after each of thousands of random
// changes — records added, dropped and active, clients seen and gone,
// live connections coming, going and speaking, unflushed touches, and
// the clock moving across the stale and lost thresholds (and back) —
// the kept counts equal a walk of every record as the read model did
// before it kept them. Changes to the state bump its version as the FSM
// does; the others are the read's own inputs. The counts are also
// reused (a walk per change would pass by doing nothing).
func TestSummaryCountsMatchAFullWalk(t *testing.T) {
	h := New(Config{StaleAfter: 60 * time.Second, LostAfter: 10 * time.Minute}, nopHost{}, hclog.NewNullLogger())
	rng := rand.New(rand.NewPCG(24, 3))
	t0 := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	now := t0
	var version uint64
	s := &raftstore.State{}
	s.Browser.Records = map[string]*raftstore.BrowserRecord{}
	s.Browser.Clients = map[string]*raftstore.BrowserClient{}
	live := map[string]time.Time{}
	touches := map[string]raftstore.Touch{}
	clients := []string{"c0", "c1", "c2", "c3", "c4"}
	around := func() time.Time { // a time near now, either side of the thresholds
		return now.Add(-time.Duration(rng.IntN(int(12*time.Minute/time.Second))) * time.Second)
	}
	anyRecord := func() *raftstore.BrowserRecord {
		for _, r := range s.Browser.Records {
			return r
		}
		return nil
	}
	walks := 0
	for step := 0; step < 20000; step++ {
		switch rng.IntN(14) {
		case 0, 1: // a record appears or is active again (state change)
			c := clients[rng.IntN(len(clients))]
			key := raftstore.RecordKey(c, "platform_a", fmt.Sprintf("u%d", rng.IntN(60)))
			s.Browser.Records[key] = &raftstore.BrowserRecord{Key: key, ClientID: c, Platform: "platform_a", LastActivityAt: around()}
			version++
		case 2: // a record is evicted
			if r := anyRecord(); r != nil {
				delete(s.Browser.Records, r.Key)
				version++
			}
		case 3: // a client's persisted times move
			c := clients[rng.IntN(len(clients))]
			s.Browser.Clients[c] = &raftstore.BrowserClient{ClientID: c, LastSeenAt: around(), LastDisconnectedAt: around()}
			version++
		case 4: // a live connection comes or speaks
			live[clients[rng.IntN(len(clients))]] = around()
		case 5: // a live connection goes
			delete(live, clients[rng.IntN(len(clients))])
		case 6: // an unflushed touch
			if r := anyRecord(); r != nil {
				touches[r.Key] = raftstore.Touch{Key: r.Key, At: around(), Kind: "relay"}
			}
		case 7: // the touches are flushed (into the state)
			for key, tc := range touches {
				if r := s.Browser.Records[key]; r != nil && tc.At.After(r.LastActivityAt) {
					r.LastActivityAt = tc.At
				}
			}
			touches = map[string]raftstore.Touch{}
			version++
		case 8: // the wall clock steps back
			now = now.Add(-time.Duration(rng.IntN(30)) * time.Second)
		case 9, 10: // time passes, often across a threshold
			now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
		default: // another read a moment later
			now = now.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		}
		before := h.summary.cur
		var got Summary
		h.countRecords(s, version, now, live, maps.Clone(touches), &got)
		if h.summary.cur != before {
			walks++
		}
		var want Summary
		for _, r := range s.Browser.Records {
			tc, touched := touches[r.Key]
			countStatus(&want, h.statusTouched(now, r, s.Browser.Clients[r.ClientID], live, tc, touched))
		}
		if got != want {
			t.Fatalf("step %d (now %v, version %d, %d live, %d touches): counts %+v, a walk of every record %+v",
				step, now.Sub(t0), version, len(live), len(touches), got, want)
		}
	}
	if walks > 20000*2/3 {
		t.Fatalf("%d walks in 20000 reads: the counts are not kept", walks)
	}
	t.Logf("%d walks in 20000 reads", walks)
}
