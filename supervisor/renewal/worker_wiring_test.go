package renewal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/raftstoretest"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/renewal"
	"github.com/svcd/svcd/supervisor/statewrite"
	"github.com/svcd/svcd/workers/scheduler"
)

// These tests run the real engine behind the worker's gRPC half and the
// supervisor's client half over a real go-plugin connection (the host
// services go over its GRPCBroker), with the supervisor's renewal driver
// over a real raft node as the host. Only the browser plugin behind the
// bridge's Inject is a stand-in.

// workerClient is the supervisor's half of a scheduler worker served in-process.
func workerClient(t *testing.T) scheduler.Scheduler {
	t.Helper()
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{scheduler.Name: &scheduler.Plugin{Impl: scheduler.Engine{}}})
	t.Cleanup(func() { server.Stop(); client.Close() })
	raw, err := client.Dispense(scheduler.Name)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(scheduler.Scheduler)
}

// browser stands in for the plugin behind the bridge's Inject. A closed
// gate lets deliveries through; an open one holds them.
type browser struct {
	mu    sync.Mutex
	texts []string
	fail  bool
	gate  chan struct{}
}

func (b *browser) inject(ctx context.Context, _ string, m bridgeproto.ConversationInject) (*bridgeproto.InjectResult, error) {
	b.mu.Lock()
	b.texts = append(b.texts, m.Text)
	gate, fail := b.gate, b.fail
	b.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail {
		return &bridgeproto.InjectResult{InjectID: "i", OK: false, Error: &bridgeproto.ErrorBody{Code: "user_typing"}}, nil
	}
	return &bridgeproto.InjectResult{InjectID: "i", OK: true, DeliveryAck: &bridgeproto.DeliveryAck{Level: 1, StatusCode: 200}}, nil
}

func (b *browser) delivered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.texts)
}

type host struct {
	node    *raftstore.Node
	store   *renewal.Store
	driver  *renewal.Driver
	browser *browser
	mode    string
}

// newHost is the supervisor side: a real raft node, the renewal store and
// driver, and count quiet auto conversations linked to a plugin client.
func newHost(t *testing.T, set scheduler.Settings, count int) *host {
	t.Helper()
	n := raftstoretest.Node(t)
	ctx := testCtx(t)
	h := &host{node: n, store: renewal.New(statewrite.Writer{Node: n}), browser: &browser{}, mode: raftstore.ModeRunning}
	h.driver = renewal.NewDriver(h.store, func() string { return h.mode }, h.browser.inject, func(string) bool { return true }, nil, set, time.Hour, hclog.NewNullLogger())
	for i := 0; i < count; i++ {
		l := raftstore.ConvLink{LocalID: "c" + string(rune('a'+i)), Platform: "platform_a", ClientID: "client-1", RemoteID: "r"}
		if _, err := h.store.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
		if _, err := n.Apply(ctx, raftstore.CmdConvMessage, raftstore.ConvMessage{ConvLink: l, MessageID: "m"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.store.SetStatus(ctx, l.LocalID, raftstore.AutoAuto, ""); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// One tick through the worker: the tick's time and settings cross the wire
// (the worker has no clock or configuration of its own), the host services
// answer over the broker, and the result comes back whole.
func TestTickThroughTheWorkerHalves(t *testing.T) {
	set := scheduler.Settings{IdleAfterMs: time.Hour.Milliseconds(), Message: "over the wire", MaxFailures: 3, MaxRenewals: 5, MaxPerTick: 2}
	h := newHost(t, set, 3)
	w := workerClient(t)
	ctx := testCtx(t)

	// At the real time nothing is quiet for an hour yet.
	res, err := w.Tick(ctx, h.driver, time.Now(), set)
	if err != nil || res.Projected != 0 || res.Dispatched != 0 {
		t.Fatalf("tick now: %+v %v", res, err)
	}
	// Two hours on, all three are quiet; at most two are dispatched per tick.
	later := time.Now().Add(2 * time.Hour)
	res, err = w.Tick(ctx, h.driver, later, set)
	if err != nil || res.Projected != 3 || res.Dispatched != 2 || res.Done != 2 || res.Failed != 0 || res.SkippedSystemPaused || len(res.Errors) != 0 {
		t.Fatalf("tick two hours on: %+v %v", res, err)
	}
	for _, j := range h.store.Jobs("", 10) {
		if j.Message != "over the wire" || !j.DueAt.Equal(later.UTC().Truncate(time.Millisecond)) {
			t.Fatalf("job %+v: want message %q due %v", j, set.Message, later.UTC().Truncate(time.Millisecond))
		}
	}
	if n := h.browser.delivered(); n != 2 {
		t.Fatalf("%d deliveries, want 2", n)
	}
	// Failed deliveries come back counted as failed: the third conversation's
	// job and one of the two next renewals (quiet for two hours again).
	h.browser.mu.Lock()
	h.browser.fail = true
	h.browser.mu.Unlock()
	res, err = w.Tick(ctx, h.driver, later, set)
	if err != nil || res.Projected != 2 || res.Dispatched != 2 || res.Failed != 2 || res.Done != 0 {
		t.Fatalf("tick with a refusing plugin: %+v %v", res, err)
	}
	if ticks := h.store.Ticks(); ticks.Total != 3 {
		t.Fatalf("tick record: %+v", ticks)
	}
}

// A paused system's skip crosses the wire and is recorded by the host.
func TestPausedSkipThroughTheWorkerHalves(t *testing.T) {
	set := scheduler.Settings{Message: "m"}
	h := newHost(t, set, 1)
	h.mode = raftstore.ModePaused
	res, err := workerClient(t).Tick(testCtx(t), h.driver, time.Now(), set)
	if err != nil || !res.SkippedSystemPaused || res.Projected != 0 || res.Dispatched != 0 {
		t.Fatalf("paused tick: %+v %v", res, err)
	}
	if ticks := h.store.Ticks(); ticks.SkippedSystemPaused != 1 || h.browser.delivered() != 0 {
		t.Fatalf("tick record %+v, %d deliveries", ticks, h.browser.delivered())
	}
}

// Two ticks at once (a worker restarted mid-tick, or two callers) race for
// the same quiet conversation: the FSM's refusals reach both workers as
// "refused", so exactly one job is created, started and typed.
func TestConcurrentTicksStartAJobOnce(t *testing.T) {
	set := scheduler.Settings{Message: "m", MaxFailures: 3, MaxRenewals: 5}
	h := newHost(t, set, 1)
	h.browser.gate = make(chan struct{})
	w1, w2 := workerClient(t), workerClient(t)
	ctx := testCtx(t)
	now := time.Now().Add(time.Minute)
	results := make(chan scheduler.Result, 2)
	for _, w := range []scheduler.Scheduler{w1, w2} {
		go func() {
			res, err := w.Tick(ctx, h.driver, now, set)
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	// The delivering tick is held in the plugin until the other one is
	// done, so the other cannot see a finished job and legitimately project
	// the next. Were both to deliver, neither returns: open the gate after
	// a while and let the counts fail.
	var got []scheduler.Result
	select {
	case r := <-results:
		got = append(got, r)
	case <-time.After(5 * time.Second):
	}
	close(h.browser.gate)
	for len(got) < 2 {
		got = append(got, <-results)
	}
	sum := scheduler.Result{}
	for _, r := range got {
		sum.Projected += r.Projected
		sum.Dispatched += r.Dispatched
		sum.Done += r.Done
		sum.Errors = append(sum.Errors, r.Errors...)
	}
	if sum.Projected != 1 || sum.Dispatched != 1 || sum.Done != 1 || len(sum.Errors) != 0 {
		t.Fatalf("two concurrent ticks together: %+v", sum)
	}
	if n := h.browser.delivered(); n != 1 {
		t.Fatalf("the message was typed %d times, want once", n)
	}
	if jobs := h.store.Jobs("", 10); len(jobs) != 1 || jobs[0].Attempts != 1 {
		t.Fatalf("jobs: %+v", jobs)
	}
}
