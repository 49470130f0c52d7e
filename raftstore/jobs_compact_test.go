package raftstore

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

// Finished renewal jobs beyond MaxFinishedJobs are dropped oldest first;
// open jobs are never dropped, and the bound holds across a restart.
func TestFinishedJobsAreCompactedToTheBound(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	defer func() { n.Shutdown() }()
	// The writes are bounded by the test's own deadline: the whole run is
	// CPU-bound and took 168 s under qemu-user on a loaded machine, past a
	// fixed 2 minutes (make test-arm64).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if dl, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), dl.Add(-10*time.Second))
	}
	defer cancel()
	apply := func(typ string, p any) any {
		v, err := n.Apply(ctx, typ, p)
		if err != nil {
			t.Errorf("%s: %v", typ, err)
		}
		return v
	}
	auto := func(id string) {
		apply(CmdConvAutomation, ConvAutomation{ConvLink: ConvLink{LocalID: id}, Status: AutoAuto})
	}
	auto("open")
	open := apply(CmdJobCreate, JobCreate{LocalID: "open", Message: "m", DueAt: time.Now()}).(RenewalJob)

	// Writers in parallel so raft batches them; one conversation each, as a
	// conversation has one open job at a time.
	const writers, perWriter = 4, MaxFinishedJobs/4 + 3
	var mu sync.Mutex
	finished := map[string]time.Time{}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		id := fmt.Sprintf("c%d", w)
		auto(id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter && !t.Failed(); i++ {
				j, _ := apply(CmdJobCreate, JobCreate{LocalID: id, Message: "m", DueAt: time.Now()}).(RenewalJob)
				apply(CmdJobStart, JobRef{JobID: j.ID})
				f, _ := apply(CmdJobFinish, JobFinish{JobID: j.ID, OK: i%2 == 0, Error: "x"}).(RenewalJob)
				if f.FinishedAt == nil {
					// apply reported why (t.Errorf); a nil time must not
					// hide it behind a panic (seen under qemu-user).
					t.Errorf("job %q: the finish answered no finished job", j.ID)
					return
				}
				n.Read(func(s *State) {
					if kept := countFinishedJobs(s); kept > MaxFinishedJobs {
						t.Errorf("%d finished jobs kept after a finish, bound %d", kept, MaxFinishedJobs)
					}
				})
				mu.Lock()
				finished[f.ID] = *f.FinishedAt
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	total := writers * perWriter
	if total <= MaxFinishedJobs {
		t.Fatalf("the test finishes only %d jobs", total)
	}
	// The newest MaxFinishedJobs by finish time must be the ones kept.
	ids := make([]string, 0, len(finished))
	for id := range finished {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return finished[ids[a]].Before(finished[ids[b]]) })
	check := func(n *Node) {
		t.Helper()
		n.Read(func(s *State) {
			if done := countFinishedJobs(s); done != MaxFinishedJobs {
				t.Errorf("%d finished jobs kept, want %d", done, MaxFinishedJobs)
			}
			for _, id := range ids[:total-MaxFinishedJobs] {
				if s.Jobs.ByID[id] != nil {
					t.Errorf("old job %s kept", id)
				}
			}
			for _, id := range ids[total-MaxFinishedJobs:] {
				if s.Jobs.ByID[id] == nil {
					t.Errorf("newer job %s dropped", id)
				}
			}
			if j := s.Jobs.ByID[open.ID]; j == nil || j.Status != JobPending {
				t.Errorf("the open job was dropped or changed: %+v", j)
			}
		})
	}
	check(n)
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	n = openTestNode(t, dir)
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	check(n)
}

func countFinishedJobs(s *State) int {
	n := 0
	for _, j := range s.Jobs.ByID {
		if j.FinishedAt != nil {
			n++
		}
	}
	return n
}
