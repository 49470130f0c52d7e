package renewal

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/raftstoretest"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/statewrite"
	"github.com/svcd/svcd/workers/scheduler"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// autoConv links id to a plugin client, records an AI reply and switches it
// to auto: the projector's candidate once idle_after has passed.
func autoConv(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := testCtx(t)
	l := raftstore.ConvLink{LocalID: id, Platform: "platform_a", ClientID: "client-1", RemoteID: "r-" + id}
	if _, err := s.Link(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Apply(ctx, raftstore.CmdConvMessage, raftstore.ConvMessage{ConvLink: l, MessageID: "m0-" + id}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetStatus(ctx, id, raftstore.AutoAuto, ""); err != nil {
		t.Fatal(err)
	}
}

// plugin stands in for the browser plugin behind the bridge hub's Inject:
// it records what it was asked to type and answers with result or err.
// gate, when set, holds every delivery until it is closed.
type plugin struct {
	mu      sync.Mutex
	calls   []bridgeproto.ConversationInject
	result  bridgeproto.InjectResult
	err     error
	gate    chan struct{}
	inside  chan string // receives the conversation id of each delivery as it starts
	offline bool        // the plugin is not connected (reachable says no)
}

func okPlugin() *plugin {
	return &plugin{result: bridgeproto.InjectResult{InjectID: "inj-1", OK: true, DeliveryAck: &bridgeproto.DeliveryAck{Level: 1, StatusCode: 200}}}
}

func (p *plugin) inject(ctx context.Context, _ string, m bridgeproto.ConversationInject) (*bridgeproto.InjectResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // the hub cannot send on a context already over
	}
	p.mu.Lock()
	p.calls = append(p.calls, m)
	gate, inside, res, err := p.gate, p.inside, p.result, p.err
	p.mu.Unlock()
	if inside != nil {
		inside <- m.ConversationRef.LocalConversationID
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func (p *plugin) reachable(string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.offline
}

func (p *plugin) setOffline(v bool) { p.mu.Lock(); p.offline = v; p.mu.Unlock() }

func (p *plugin) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// mode is the system mode the driver reads, switchable by a test.
type mode struct {
	mu sync.Mutex
	m  string
}

func (m *mode) get() string  { m.mu.Lock(); defer m.mu.Unlock(); return m.m }
func (m *mode) set(v string) { m.mu.Lock(); m.m = v; m.mu.Unlock() }

// rig is a driver over a real node with the real engine as its tick.
type rig struct {
	node   *raftstore.Node
	store  *Store
	driver *Driver
	plugin *plugin
	mode   *mode
}

func newRig(t *testing.T, set scheduler.Settings) *rig {
	t.Helper()
	n := raftstoretest.Node(t)
	r := &rig{node: n, store: New(statewrite.Writer{Node: n}), plugin: okPlugin(), mode: &mode{m: raftstore.ModeRunning}}
	if set.Message == "" {
		set.Message = "Please continue."
	}
	r.driver = NewDriver(r.store, r.mode.get, r.plugin.inject, r.plugin.reachable, scheduler.Engine{}.Tick, set, time.Hour, hclog.NewNullLogger())
	return r
}

// tick runs one engine tick with the driver as its host, now.
func (r *rig) tick(t *testing.T) scheduler.Result {
	t.Helper()
	res, err := scheduler.Engine{}.Tick(testCtx(t), r.driver, time.Now().UTC(), r.driver.settings)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (r *rig) conv(t *testing.T, id string) raftstore.Conversation {
	t.Helper()
	c, ok := r.store.Get(id)
	if !ok {
		t.Fatalf("no conversation %s", id)
	}
	return c
}

func (r *rig) job(t *testing.T, id string) raftstore.RenewalJob {
	t.Helper()
	var j raftstore.RenewalJob
	found := false
	r.node.Read(func(st *raftstore.State) {
		if x := st.Jobs.ByID[id]; x != nil {
			j, found = *x, true
		}
	})
	if !found {
		t.Fatalf("no job %s", id)
	}
	return j
}

// createJob asks for a job through the scheduler's write path.
func (r *rig) createJob(t *testing.T, localID string) (raftstore.RenewalJob, bool) {
	t.Helper()
	v, refused, err := r.driver.Apply(testCtx(t), raftstore.CmdJobCreate, raftstore.JobCreate{LocalID: localID, Message: "go on", DueAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if refused {
		return raftstore.RenewalJob{}, true
	}
	var j raftstore.RenewalJob
	if err := json.Unmarshal(v, &j); err != nil {
		t.Fatal(err)
	}
	return j, false
}

func (r *rig) startJob(t *testing.T, id string) bool {
	t.Helper()
	_, refused, err := r.driver.Apply(testCtx(t), raftstore.CmdJobStart, raftstore.JobRef{JobID: id})
	if err != nil {
		t.Fatal(err)
	}
	return !refused
}
