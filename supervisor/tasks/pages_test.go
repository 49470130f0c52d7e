package tasks

import (
	"testing"

	"github.com/svcd/svcd/raftstore"
)

// Paging with next_cursor while tasks start and finish: every task that
// existed when paging began is on exactly one page, no task is on two, the
// pages keep newest-first order, and the last page has no next cursor.
func TestPagesHoldEveryTaskOnceWhileWritesGoOn(t *testing.T) {
	s, _, ctx := newStore(t)
	type ref struct{ id, run string }
	var before []ref
	for i := 0; i < 60; i++ {
		id, run, err := s.Start(ctx, "instruction_batch", "", "")
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, ref{id, run})
	}
	seen := map[string]int{}
	cursor, pages := "", 0
	for {
		page, next := s.List("", 7, cursor)
		pages++
		for i, x := range page {
			seen[x.ID]++
			if i > 0 && raftstore.TaskSeq(page[i-1].ID) <= raftstore.TaskSeq(x.ID) {
				t.Fatalf("page %d out of order: %v", pages, summaryIDs(page))
			}
		}
		// Writes between pages: a new task, and an old one finishing.
		if _, _, err := s.Start(ctx, "instruction_batch", "during", ""); err != nil {
			t.Fatal(err)
		}
		r := before[(pages*13)%len(before)]
		s.Finish(ctx, r.id, r.run, "succeeded", "")
		if next == "" {
			if len(page) > 7 {
				t.Fatalf("last page holds %d", len(page))
			}
			break
		}
		if len(page) != 7 || next != page[len(page)-1].ID {
			t.Fatalf("page %d: %d tasks, next %q", pages, len(page), next)
		}
		cursor = next
	}
	for _, r := range before {
		if seen[r.id] != 1 {
			t.Fatalf("task %s seen %d times over %d pages", r.id, seen[r.id], pages)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("task %s seen %d times", id, n)
		}
	}
	// A status filter pages the same way.
	var running int
	for cursor = ""; ; {
		page, next := s.List(raftstore.TaskRunning, 5, cursor)
		running += len(page)
		for _, x := range page {
			if x.Status != raftstore.TaskRunning {
				t.Fatalf("status filter let %s (%s) through", x.ID, x.Status)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	all, _ := s.List(raftstore.TaskRunning, MaxLimit, "")
	if running != len(all) {
		t.Fatalf("paged %d running tasks, one page of all says %d", running, len(all))
	}
}

func TestCursorShape(t *testing.T) {
	for c, ok := range map[string]bool{"task-1": true, "task-42": true, "": false, "task-": false, "task-0": false, "task-01": false, "job-3": false, "task-1x": false, "task-99999999999999999999": false} {
		if ValidCursor(c) != ok {
			t.Errorf("ValidCursor(%q) = %v", c, !ok)
		}
	}
}
