package renewal

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/periodic"
	"github.com/svcd/svcd/workers/scheduler"
)

// InjectFunc sends a conversation_inject to a connected plugin client and
// returns its inject_result (the bridge hub's Inject).
type InjectFunc func(ctx context.Context, clientID string, m bridgeproto.ConversationInject) (*bridgeproto.InjectResult, error)

// ReachableFunc says whether the plugin client holding a conversation is
// connected now (the bridge hub).
type ReachableFunc func(clientID string) bool

// TickFunc runs one tick on the scheduler worker with host lent for it.
type TickFunc func(ctx context.Context, host scheduler.Host, now time.Time, s scheduler.Settings) (scheduler.Result, error)

// Driver ticks the scheduler worker while this node leads, and is the host
// the worker reaches back into (state, views, delivery).
type Driver struct {
	store     *Store
	mode      func() string
	inject    InjectFunc
	reachable ReachableFunc
	tick      TickFunc
	settings  scheduler.Settings
	every     time.Duration
	log       hclog.Logger

	loop     *periodic.Loop // ticks while this node leads
	mu       sync.Mutex
	inFlight map[string]bool // job ids the host is delivering right now
	last     scheduler.Result
	lastErr  string
	m        *driverMetrics // metrics.go
}

// NewDriver builds the driver; Start/Stop follow leadership.
func NewDriver(store *Store, mode func() string, inject InjectFunc, reachable ReachableFunc, tick TickFunc, s scheduler.Settings, every time.Duration, log hclog.Logger) *Driver {
	d := &Driver{store: store, mode: mode, inject: inject, reachable: reachable, tick: tick, settings: s, every: every, log: log, inFlight: map[string]bool{}, m: newDriverMetrics()}
	d.loop = periodic.New(every, d.once)
	return d
}

// Start begins ticking (on becoming leader). Idempotent.
func (d *Driver) Start() { d.loop.Start() }

// Stop ends ticking (on losing leadership, at shutdown) and waits for the
// tick in progress.
func (d *Driver) Stop() { d.loop.Stop() }

// Status is the last tick's result and error, for /v1/renewal/scheduler.
func (d *Driver) Status() (running bool, last scheduler.Result, lastErr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loop.Running(), d.last, d.lastErr
}

func (d *Driver) once(ctx context.Context) {
	// Jobs left running by a worker that died between starting a job and
	// asking for its delivery go back to pending; deliveries this host is
	// still carrying out are not touched (they record their own outcome).
	d.mu.Lock()
	except := make([]string, 0, len(d.inFlight))
	for id := range d.inFlight {
		except = append(except, id)
	}
	d.mu.Unlock()
	if _, err := d.store.w.Apply(ctx, raftstore.CmdJobRecover, raftstore.JobRecover{Except: except}); err != nil {
		d.log.Warn("could not recover orphaned jobs", "error", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 10*d.every+time.Minute)
	defer cancel()
	start := time.Now()
	res, err := d.tick(tctx, d, start.UTC(), d.settings)
	d.m.tick(time.Since(start), res.SkippedSystemPaused, err)
	d.mu.Lock()
	d.last, d.lastErr = res, ""
	if err != nil {
		d.lastErr = err.Error()
	}
	d.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		d.log.Warn("scheduler tick failed", "error", err)
	}
	if res.Projected+res.Dispatched > 0 {
		d.store.Changed()
	}
}

// Apply implements scheduler.Host: one raftstore command; a refusal by the
// FSM is reported as refused, not as an error.
func (d *Driver) Apply(ctx context.Context, typ string, payload any) ([]byte, bool, error) {
	switch typ {
	case raftstore.CmdJobCreate, raftstore.CmdJobStart, raftstore.CmdTickRecord:
	default:
		return nil, false, errors.New("the scheduler may not write " + typ)
	}
	v, err := d.store.w.Apply(ctx, typ, payload)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code == "command_refused" {
			return nil, true, nil
		}
		return nil, false, err
	}
	b, err := json.Marshal(v)
	return b, false, err
}

// View implements scheduler.Host. It holds what a tick can act on: the
// open jobs and the auto conversations that either have one or have been
// quiet for idle_after (the engine projects for those and skips the rest).
// It reads the FSM's auto index, so a tick over thousands of conversations
// none of which is due visits the auto ones only and sends the worker none.
func (d *Driver) View(ctx context.Context, now time.Time) (scheduler.View, error) {
	v := scheduler.View{Mode: d.mode()}
	quietSince := now.Add(-time.Duration(d.settings.IdleAfterMs) * time.Millisecond)
	d.store.w.Read(func(st *raftstore.State) {
		open := map[string]bool{}
		for _, j := range st.Jobs.ByID {
			if j.Status == raftstore.JobPending || j.Status == raftstore.JobRunning {
				v.Jobs = append(v.Jobs, scheduler.Job{ID: j.ID, LocalID: j.LocalID, Status: j.Status, DueAt: j.DueAt})
				open[j.LocalID] = true
			}
		}
		// The last finished job of each conversation counts as activity
		// too; it is gathered only once a conversation whose last AI reply
		// is old enough needs it (a reply newer than quietSince already
		// makes a conversation not quiet).
		var lastJob map[string]time.Time
		st.Conversations.EachAuto(func(c *raftstore.Conversation) {
			if !open[c.LocalID] && c.LastAIMessageAt.After(quietSince) {
				return // nothing for the tick to do with it
			}
			if lastJob == nil {
				lastJob = map[string]time.Time{}
				for _, j := range st.Jobs.ByID {
					if j.FinishedAt != nil && j.FinishedAt.After(lastJob[j.LocalID]) {
						lastJob[j.LocalID] = *j.FinishedAt
					}
				}
			}
			last := c.LastAIMessageAt
			if t := lastJob[c.LocalID]; t.After(last) {
				last = t
			}
			if !open[c.LocalID] && (last.IsZero() || last.After(quietSince)) {
				return
			}
			v.Conversations = append(v.Conversations, scheduler.Conversation{
				LocalID: c.LocalID, AutomationStatus: c.AutomationStatus, ExecutionState: c.ExecutionState,
				LastActivityAt: last, Linked: c.ClientID != "", Reachable: c.ClientID != "" && d.reachable(c.ClientID),
			})
		})
	})
	return v, nil
}

// Deliver implements scheduler.Host: it types the job's message into the
// conversation through the plugin holding it and records the outcome. It
// runs to the end on its own context, so a worker that dies meanwhile loses
// nothing and the job is never left to run twice.
func (d *Driver) Deliver(_ context.Context, jobID string) (scheduler.Delivery, error) {
	d.mu.Lock()
	d.inFlight[jobID] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inFlight, jobID)
		d.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var job raftstore.RenewalJob
	var conv raftstore.Conversation
	found := false
	d.store.w.Read(func(st *raftstore.State) {
		if j := st.Jobs.ByID[jobID]; j != nil {
			job, found = *j, true
			if c := st.Conversations.ByID[j.LocalID]; c != nil {
				conv = *c
			}
		}
	})
	if !found || job.Status != raftstore.JobRunning {
		return scheduler.Delivery{}, errors.New("job " + jobID + " is not running")
	}
	out := scheduler.Delivery{}
	res, err := d.inject(ctx, conv.ClientID, bridgeproto.ConversationInject{
		ConversationRef: bridgeproto.ConversationRef{Platform: conv.Platform, LocalConversationID: conv.LocalID, RemoteConversationID: conv.RemoteID},
		Kind:            bridgeproto.InjectRenewal, Text: job.Message, DeliveryKey: RenewalKey(job),
	})
	switch {
	case err != nil:
		out.Error = err.Error()
	case !res.OK:
		out.InjectID, out.Error = res.InjectID, "the plugin could not deliver the message"
		if res.Error != nil && res.Error.Code != "" {
			out.Error += " (" + res.Error.Code + ")"
		}
	default:
		out.OK, out.InjectID = true, res.InjectID
		if res.Duplicate {
			// Typed before a crash that lost its inject_result: delivered.
			d.log.Info("renewal already delivered; the plugin typed nothing now", "job_id", jobID, "local_conversation_id", conv.LocalID, "inject_id", res.InjectID)
		}
	}
	var ack *raftstore.DeliveryAck
	if res != nil && res.DeliveryAck != nil {
		ack = &raftstore.DeliveryAck{Level: res.DeliveryAck.Level, StatusCode: res.DeliveryAck.StatusCode}
		out.Level, out.StatusCode = ack.Level, ack.StatusCode
	}
	d.m.delivered(out.OK, out.OK && res.Duplicate, err == nil && !out.OK)
	if _, err := d.store.w.Apply(ctx, raftstore.CmdJobFinish, raftstore.JobFinish{
		JobID: jobID, OK: out.OK, Error: out.Error, DeliveryAck: ack, InjectID: out.InjectID, Duplicate: out.OK && res.Duplicate,
		MaxFailures: d.settings.MaxFailures, MaxRenewals: d.settings.MaxRenewals,
	}); err != nil {
		return out, err
	}
	d.store.Changed()
	return out, nil
}

// Jobs lists jobs newest first (one conversation's when localID is set).
func (s *Store) Jobs(localID string, limit int) []raftstore.RenewalJob {
	var out []raftstore.RenewalJob
	s.w.Read(func(st *raftstore.State) {
		for _, j := range st.Jobs.ByID {
			if localID == "" || j.LocalID == localID {
				out = append(out, *j)
			}
		}
	})
	sortJobs(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Ticks is the scheduler's durable tick record.
func (s *Store) Ticks() raftstore.TickStats {
	var t raftstore.TickStats
	s.w.Read(func(st *raftstore.State) { t = st.Jobs.Ticks })
	return t
}

// RecoverJobs returns every running job to pending (start-up).
func (s *Store) RecoverJobs(ctx context.Context) (int, error) {
	v, err := s.w.Apply(ctx, raftstore.CmdJobRecover, raftstore.JobRecover{})
	if err != nil {
		return 0, err
	}
	return v.(int), nil
}
