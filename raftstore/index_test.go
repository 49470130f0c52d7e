package raftstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svcd/svcd/shared/keyrange"
)

// checkIndexes compares the FSM's derived indexes with a scan of the state
// they index: the auto conversations, and the tasks in sequence order.
func checkIndexes(s *State, tasks bool) error {
	want := map[string]bool{}
	for id, cv := range s.Conversations.ByID {
		if cv.AutomationStatus == AutoAuto {
			want[id] = true
		}
	}
	got := map[string]bool{}
	s.Conversations.EachAuto(func(cv *Conversation) {
		if s.Conversations.ByID[cv.LocalID] != cv {
			got["stale:"+cv.LocalID] = true
		}
		got[cv.LocalID] = true
	})
	if fmt.Sprint(got) != fmt.Sprint(want) || s.Conversations.AutoCount() != len(want) {
		return fmt.Errorf("auto index %v, scan says %v", got, want)
	}
	if err := checkRecent(s); err != nil {
		return err
	}
	if err := checkRecordKeys(s); err != nil {
		return err
	}
	if !tasks {
		return nil
	}
	if err := checkRelayKeys(s); err != nil {
		return err
	}
	var scan []string
	for id := range s.Tasks.ByID {
		scan = append(scan, id)
	}
	sort.Slice(scan, func(i, j int) bool { return TaskSeq(scan[i]) > TaskSeq(scan[j]) })
	var walked []string
	s.Tasks.Newest(0, func(x *Task) bool { walked = append(walked, x.ID); return true })
	if fmt.Sprint(walked) != fmt.Sprint(scan) {
		return fmt.Errorf("task index walks %v, scan says %v", walked, scan)
	}
	// From a cursor: exactly the tasks below it.
	if len(scan) > 2 {
		cut := TaskSeq(scan[len(scan)/2])
		var below []string
		s.Tasks.Newest(cut, func(x *Task) bool { below = append(below, x.ID); return true })
		if fmt.Sprint(below) != fmt.Sprint(scan[len(scan)/2+1:]) {
			return fmt.Errorf("tasks below %d: %v, want %v", cut, below, scan[len(scan)/2+1:])
		}
	}
	return nil
}

// checkRecent compares the conversations' recency index with a sort of the
// area (most recently updated first, ties by id), from the start and from
// a cursor at a few places.
func checkRecent(s *State) error {
	var scan []*Conversation
	for _, cv := range s.Conversations.ByID {
		scan = append(scan, cv)
	}
	sort.Slice(scan, func(i, j int) bool {
		if !scan[i].UpdatedAt.Equal(scan[j].UpdatedAt) {
			return scan[i].UpdatedAt.After(scan[j].UpdatedAt)
		}
		return scan[i].LocalID < scan[j].LocalID
	})
	ids := func(cs []*Conversation) string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.LocalID + "@" + c.UpdatedAt.Format(time.RFC3339Nano)
		}
		return fmt.Sprint(out)
	}
	for k := -1; k < len(scan); k += max(10, len(scan)/4) {
		var walked []*Conversation
		var at time.Time
		var id string
		if k >= 0 {
			at, id = scan[k].UpdatedAt, scan[k].LocalID
		}
		s.Conversations.Recent(at, id, func(cv *Conversation) bool { walked = append(walked, cv); return true })
		if ids(walked) != ids(scan[k+1:]) {
			return fmt.Errorf("recency index after %d walks %s, scan says %s", k, ids(walked), ids(scan[k+1:]))
		}
	}
	if n := len(s.Conversations.recent.stamp); n != len(s.Conversations.ByID) {
		return fmt.Errorf("recency index holds %d ids, the area %d", n, len(s.Conversations.ByID))
	}
	return nil
}

// checkRecordKeys compares the browser records' key index with a sort of
// the keys, from the start and after a few keys, and each client's
// HasRecords with a scan.
func checkRecordKeys(s *State) error {
	var scan []string
	owners := map[string]bool{}
	for k, r := range s.Browser.Records {
		scan = append(scan, k)
		owners[r.ClientID] = true
	}
	sort.Strings(scan)
	for k := -1; k < len(scan); k += max(7, len(scan)/4) {
		after := ""
		if k >= 0 {
			after = scan[k]
		}
		var walked []string
		s.Browser.RecordsAfter(after, func(r *BrowserRecord) bool { walked = append(walked, r.Key); return true })
		if fmt.Sprint(walked) != fmt.Sprint(scan[k+1:]) {
			return fmt.Errorf("record index after %q walks %v, scan says %v", after, walked, scan[k+1:])
		}
	}
	for i := 0; i < 12; i++ {
		c := fmt.Sprintf("client-%d", i)
		if s.Browser.HasRecords(c) != owners[c] {
			return fmt.Errorf("HasRecords(%s) = %v, scan says %v", c, !owners[c], owners[c])
		}
	}
	return nil
}

// checkRelayKeys compares the relay targets' key index with a sort of the
// area, over the whole area and over ranges between a few of its keys.
func checkRelayKeys(s *State) error {
	var scan []string
	for k := range s.Relay.Targets {
		scan = append(scan, k)
	}
	sort.Strings(scan)
	walk := func(r keyrange.Range) []string {
		var walked []string
		s.Relay.TargetsIn(r, func(t *RelayTarget) bool { walked = append(walked, t.Target); return true })
		return walked
	}
	if got := walk(keyrange.Range{}); fmt.Sprint(got) != fmt.Sprint(scan) {
		return fmt.Errorf("relay index walks %d targets, scan says %d", len(got), len(scan))
	}
	step := max(7, len(scan)/4)
	for k := 0; k+step < len(scan); k += step {
		if got, want := walk(keyrange.Range{After: scan[k], Through: scan[k+step], Bounded: true}), scan[k+1:k+step+1]; fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("relay index from %q to %q walks %v, scan says %v", scan[k], scan[k+step], got, want)
		}
	}
	return nil
}

type bufSink struct{ bytes.Buffer }

func (b *bufSink) ID() string    { return "test" }
func (b *bufSink) Cancel() error { return nil }
func (b *bufSink) Close() error  { return nil }

// Random command sequences through the FSM's Apply (the path raft takes),
// with small bounds reached: after every command the indexes match a scan,
// and a snapshot restored into a new FSM has the same state and indexes
// that again match a scan, and stays so under further commands.
func TestIndexesMatchAScanAfterRandomCommandsAndRestore(t *testing.T) {
	rng := rand.New(rand.NewSource(24))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var idx uint64
	apply := func(f *fsm, typ string, payload any) {
		idx++
		p, _ := json.Marshal(payload)
		// Same At now and then: ties must not make replicas differ.
		if rng.Intn(4) > 0 {
			at = at.Add(time.Duration(rng.Intn(3)) * time.Millisecond)
		}
		b, _ := json.Marshal(Command{Type: typ, At: at, Payload: p})
		f.Apply(&raft.Log{Index: idx, Data: b})
	}
	conv := func() ConvLink {
		id := fmt.Sprintf("c%d", rng.Intn(40))
		return ConvLink{LocalID: id, Platform: "platform_a", ClientID: "cl", RemoteID: "r" + id}
	}
	statuses := []string{AutoAuto, AutoManual, AutoPaused}
	step := func(f *fsm) {
		var seq uint64
		var jobs, open []string
		f.mu.RLock()
		seq = f.state.Tasks.Seq
		for id, j := range f.state.Jobs.ByID {
			jobs = append(jobs, id)
			if j.Status == JobPending || j.Status == JobRunning {
				open = append(open, id)
			}
		}
		f.mu.RUnlock()
		sort.Strings(jobs)
		sort.Strings(open)
		job := func() string {
			if len(open) > 0 && rng.Intn(4) > 0 {
				return open[rng.Intn(len(open))]
			}
			if len(jobs) == 0 {
				return "job-1"
			}
			return jobs[rng.Intn(len(jobs))]
		}
		task := func() TaskRef {
			n := uint64(1)
			if seq > 0 {
				n = seq - uint64(rng.Intn(int(min(seq, 30))))
			}
			return TaskRef{TaskID: fmt.Sprintf("task-%d", n), RunID: fmt.Sprintf("run-%d-1", n)}
		}
		switch rng.Intn(15) {
		case 14:
			// Keys from a space larger than the area's bound: evictions.
			var p RelaySave
			for n := 1 + rng.Intn(8); n > 0; n-- {
				p.Targets = append(p.Targets, RelayTarget{Target: fmt.Sprintf("platform_a/client-%d/u%d", rng.Intn(12), rng.Intn(MaxRelayTargets/4)), Breaker: BreakerClosed})
			}
			apply(f, CmdRelaySave, p)
		case 11:
			apply(f, CmdConvRecover, struct{}{})
		case 12:
			apply(f, CmdConvExecution, ConvExecution{ConvLink: conv(), State: ExecInstructionRunning})
		case 13:
			ref := RecordRef{ClientID: fmt.Sprintf("client-%d", rng.Intn(12)), Platform: "platform_a", Account: fmt.Sprintf("u%d", rng.Intn(30))}
			apply(f, CmdBrowserCredentials, BrowserCredentials{RecordRef: ref, Fingerprint: "sha256:" + strings.Repeat("ab", 32), HeaderNames: []string{"authorization"}, HeaderCount: 1})
		case 0:
			apply(f, CmdConvLink, conv())
		case 1:
			apply(f, CmdConvMessage, ConvMessage{ConvLink: conv(), MessageID: fmt.Sprint(rng.Intn(5))})
		case 2, 3:
			apply(f, CmdConvAutomation, ConvAutomation{ConvLink: conv(), Status: statuses[rng.Intn(3)], Resume: rng.Intn(5) == 0})
		case 4:
			apply(f, CmdJobCreate, JobCreate{LocalID: conv().LocalID, Message: "go on", DueAt: at})
		case 5:
			apply(f, CmdJobStart, JobRef{JobID: job()})
		case 6:
			apply(f, CmdJobFinish, JobFinish{JobID: job(), OK: rng.Intn(2) == 0, Error: "e", MaxFailures: 2, MaxRenewals: 2})
		case 7:
			apply(f, CmdJobRecover, JobRecover{})
		case 8:
			apply(f, CmdTaskStart, TaskStart{Kind: "k"})
		case 9:
			apply(f, CmdTaskStart, TaskStart{Kind: "k"})
			apply(f, CmdTaskFinish, TaskFinish{TaskRef: TaskRef{TaskID: fmt.Sprintf("task-%d", seq+1), RunID: fmt.Sprintf("run-%d-1", seq+1)}, Status: TaskFailed})
		case 10:
			apply(f, CmdTaskFinish, TaskFinish{TaskRef: task(), Status: TaskSucceeded})
		}
	}
	check := func(f *fsm, when string, tasks bool) {
		t.Helper()
		f.mu.RLock()
		defer f.mu.RUnlock()
		if err := checkIndexes(f.state, tasks); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	f := newFSM()
	for i := 0; i < 15000; i++ {
		step(f)
		check(f, fmt.Sprintf("after command %d", i), i%7 == 0)
		if i%4000 == 3999 {
			g, _ := snapshotRestore(t, f)
			check(g, "after restore", true)
			a, _ := json.Marshal(f.state)
			b, _ := json.Marshal(g.state)
			if !bytes.Equal(a, b) {
				t.Fatal("restored state differs")
			}
			f = g // go on from the restored FSM
		}
	}
	f.mu.RLock()
	n, seq, auto := len(f.state.Tasks.ByID), f.state.Tasks.Seq, f.state.Conversations.AutoCount()
	f.mu.RUnlock()
	if seq <= uint64(n) || auto == 0 {
		t.Fatalf("the sequence exercised too little: %d tasks kept of %d (no compaction?), %d auto", n, seq, auto)
	}
	f.mu.RLock()
	targets := len(f.state.Relay.Targets)
	f.mu.RUnlock()
	if targets != MaxRelayTargets {
		t.Fatalf("%d relay targets kept: the sequence never reached the bound (%d), so never evicted", targets, MaxRelayTargets)
	}
}
