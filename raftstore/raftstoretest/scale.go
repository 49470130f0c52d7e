package raftstoretest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// Scale is the size of a state made through the FSM's own commands
// (issue 24's "state at scale"). Areas with a bound keep what the bound
// keeps: the commands of every task and job are applied, compaction then
// drops the oldest finished ones as it would in a daemon that ran them.
type Scale struct {
	Tasks         int // finished tasks, each started, logged and finished
	LogLines      int // log lines per task (one task.log command)
	Conversations int // renewal conversations, linked
	Auto          int // of which the first Auto are switched to auto
	Browser       int // browser records (credentials captured)
	Jobs          int // renewal jobs created, started and finished (one per auto conversation)
	// RelayTargets are relay targets saved as the relay flusher saves them
	// (relay.save, batches of relayBatch): target i is browser record i's
	// key, the target that relaying to that record makes.
	RelayTargets int
}

// LargeScale is issue 24's state: 100,000 finished tasks with logs, 10,000
// renewal conversations (half auto), 2,000 browser records, 5,000 jobs,
// and a relay target for each browser record (the relay area's bound is
// 2,048).
func LargeScale() Scale {
	return Scale{Tasks: 100_000, LogLines: 4, Conversations: 10_000, Auto: 5_000, Browser: 2_000, Jobs: 5_000, RelayTargets: 2_000}
}

// ScaleDivEnv divides LargeScale's counts (SVC_BENCH_STATE_DIV=100 for a
// quick run of the state figures); unset or < 2 leaves them.
const ScaleDivEnv = "SVC_BENCH_STATE_DIV"

// Divided is s with every count divided by SVC_BENCH_STATE_DIV (if set).
func (s Scale) Divided() Scale {
	d, err := strconv.Atoi(os.Getenv(ScaleDivEnv))
	if err != nil || d < 2 {
		return s
	}
	return Scale{Tasks: s.Tasks / d, LogLines: s.LogLines, Conversations: s.Conversations / d, Auto: s.Auto / d, Browser: s.Browser / d, Jobs: s.Jobs / d, RelayTargets: s.RelayTargets / d}
}

// Applier is the write path Fill uses: raftstore.Node.Apply.
type Applier interface {
	Apply(ctx context.Context, typ string, payload any) (any, error)
}

// fillParallel is how many commands are in flight at once. Raft groups
// concurrent proposals into one log write (up to MaxAppendEntries), so the
// state is built through the real apply path at a batched disk cost.
const fillParallel = 128

// Fill applies the commands that make s, through n's raft log and FSM.
// It returns the number of commands applied.
func Fill(ctx context.Context, n Applier, s Scale) (int64, error) {
	var count atomic.Int64
	apply := func(typ string, p any) error {
		count.Add(1)
		if _, err := n.Apply(ctx, typ, p); err != nil {
			return fmt.Errorf("%s: %w", typ, err)
		}
		return nil
	}
	lines := make([]string, s.LogLines)
	for i := range lines {
		lines[i] = fmt.Sprintf("step %d: %s", i, strings.Repeat("x", 60))
	}
	steps := []struct {
		n  int
		fn func(i int) error
	}{
		{s.Conversations, func(i int) error {
			link := convLink(i)
			if err := apply(raftstore.CmdConvMessage, raftstore.ConvMessage{ConvLink: link, MessageID: "m1"}); err != nil {
				return err
			}
			if i >= s.Auto {
				return nil
			}
			return apply(raftstore.CmdConvAutomation, raftstore.ConvAutomation{ConvLink: link, Status: raftstore.AutoAuto})
		}},
		{s.Jobs, func(i int) error {
			// Job i belongs to auto conversation i: one open job each at a
			// time, so there are at most as many jobs as auto conversations.
			if i >= min(s.Auto, s.Conversations) {
				return fmt.Errorf("job %d needs an auto conversation of its own", i)
			}
			id := convLink(i).LocalID
			v, err := n.Apply(ctx, raftstore.CmdJobCreate, raftstore.JobCreate{LocalID: id, Message: "please go on"})
			count.Add(1)
			if err != nil {
				return fmt.Errorf("job.create: %w", err)
			}
			j := v.(raftstore.RenewalJob)
			if err := apply(raftstore.CmdJobStart, raftstore.JobRef{JobID: j.ID}); err != nil {
				return err
			}
			return apply(raftstore.CmdJobFinish, raftstore.JobFinish{JobID: j.ID, OK: true, DeliveryAck: &raftstore.DeliveryAck{Level: 1, StatusCode: 200}})
		}},
		{s.Browser, func(i int) error {
			ref := browserRef(i)
			return apply(raftstore.CmdBrowserCredentials, raftstore.BrowserCredentials{RecordRef: ref,
				Fingerprint: "sha256:" + fmt.Sprintf("%064x", i), HeaderNames: []string{"authorization", "x-session"}, HeaderCount: 2, CookieCount: 3})
		}},
		{(s.RelayTargets + relayBatch - 1) / relayBatch, func(i int) error {
			var p raftstore.RelaySave
			for j := i * relayBatch; j < min((i+1)*relayBatch, s.RelayTargets); j++ {
				p.Targets = append(p.Targets, relayTarget(j))
			}
			return apply(raftstore.CmdRelaySave, p)
		}},
		{s.Tasks, func(i int) error {
			v, err := n.Apply(ctx, raftstore.CmdTaskStart, raftstore.TaskStart{Kind: "instruction_batch", Title: fmt.Sprintf("batch %d", i), Source: "bench", Conversation: convLink(i % max(s.Conversations, 1)).LocalID})
			count.Add(1)
			if err != nil {
				return fmt.Errorf("task.start: %w", err)
			}
			ref := v.(raftstore.TaskRef)
			if len(lines) > 0 {
				if err := apply(raftstore.CmdTaskLog, raftstore.TaskLog{TaskRef: ref, Lines: lines}); err != nil {
					return err
				}
			}
			status := raftstore.TaskSucceeded
			if i%10 == 0 {
				status = raftstore.TaskFailed
			}
			return apply(raftstore.CmdTaskFinish, raftstore.TaskFinish{TaskRef: ref, Status: status, Summary: "done"})
		}},
	}
	for _, st := range steps {
		if err := parallel(ctx, st.n, st.fn); err != nil {
			return count.Load(), err
		}
	}
	return count.Load(), nil
}

// browserRef is browser record i's client, platform and account.
func browserRef(i int) raftstore.RecordRef {
	return raftstore.RecordRef{ClientID: fmt.Sprintf("client-%d", i%40), Browser: "chromium", Platform: "platform_a",
		Account: fmt.Sprintf("user%d@example.test", i), Host: "a.example.test"}
}

// relayBatch is how many targets one relay.save carries, as the relay
// flusher sends the targets changed since its last flush together.
const relayBatch = 50

// relayTarget is record i's relay target after some traffic: a window in
// use, every tenth backing off after a 429, every fiftieth with its breaker
// open.
func relayTarget(i int) raftstore.RelayTarget {
	r := browserRef(i)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	t := raftstore.RelayTarget{Target: raftstore.RecordKey(r.ClientID, r.Platform, r.Account), WindowStart: at, WindowCount: 1 + i%7,
		Breaker: raftstore.BreakerClosed, LastStatus: 200, LastOutcomeAt: at, Admitted: int64(10 + i%100)}
	if i%10 == 0 {
		t.BackoffUntil, t.BackoffLevel, t.LastStatus, t.Refused = at.Add(2*time.Second), 1, 429, 3
	}
	if i%50 == 0 {
		t.Breaker, t.BreakerFailures, t.BreakerOpenedAt, t.LastStatus = raftstore.BreakerOpen, 5, at, 503
	}
	return t
}

func convLink(i int) raftstore.ConvLink {
	id := fmt.Sprintf("conv-%06d", i)
	return raftstore.ConvLink{LocalID: id, Platform: "platform_a", ClientID: fmt.Sprintf("client-%d", i%40), RemoteID: "remote-" + id}
}

// parallel runs fn(0..n-1), fillParallel at a time, stopping at the first error.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for w := 0; w < min(fillParallel, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					errOnce.Do(func() { first = err })
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
