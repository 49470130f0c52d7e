package e2e

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// schedEnv drives time through configuration: ticks every 100 ms, a
// conversation counts as quiet after 300 ms.
func schedEnv(extra ...string) []string {
	return append([]string{"SVC_RENEWAL_TICK_MS=100", "SVC_RENEWAL_IDLE_MS=300", "SVC_RENEWAL_MESSAGE=keep going",
		"SVC_RENEWAL_MAX_FAILURES=2", "SVC_RENEWAL_MAX_RENEWALS=3"}, extra...)
}

type jobView struct {
	ID          string `json:"job_id"`
	LocalID     string `json:"local_conversation_id"`
	Status      string `json:"status"`
	Message     string `json:"message"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error"`
	InjectID    string `json:"inject_id"`
	Duplicate   bool   `json:"duplicate"`
	DeliveryAck *struct {
		Level      int `json:"level"`
		StatusCode int `json:"status_code"`
	} `json:"delivery_ack"`
}

type jobsAnswer struct {
	Jobs  []jobView `json:"jobs"`
	Ticks struct {
		Total               int64 `json:"total"`
		SkippedSystemPaused int64 `json:"skipped_system_paused"`
	} `json:"ticks"`
}

func jobsOf(t *testing.T, d *harness.Daemon, conv string) jobsAnswer {
	t.Helper()
	var env struct{ Data jobsAnswer }
	d.Do("GET", "/v1/renewal/jobs?local_conversation_id="+conv+"&limit=100", nil).Decode(t, &env)
	return env.Data
}

func convOf(t *testing.T, d *harness.Daemon, id string) map[string]any {
	t.Helper()
	return d.Do("GET", "/v1/renewal/conversations/"+id, nil).JSON(t)["data"].(map[string]any)
}

// linkAndReply has the plugin link a conversation and report one AI reply.
func linkAndReply(t *testing.T, p *fakeplugin.Plugin, id, msgID string) {
	t.Helper()
	ref := bridgeproto.ConversationRef{Platform: "platform_a", LocalConversationID: id, RemoteConversationID: "r-" + id}
	if err := p.Send(bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, ConversationRef: ref}); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage, ConversationRef: ref, MessageID: msgID, Text: "an answer"}); err != nil {
		t.Fatal(err)
	}
}

// The life of an auto conversation: quiet → job projected → delivered
// through the plugin → acknowledged → done; renewals without a new reply
// stop with an automatic pause; manual conversations are left alone.
func TestRenewalLifeOfAnAutoConversation(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, schedEnv()...)
	p := connectPlugin(t, d, "renewal-plugin", nil)
	linkAndReply(t, p, "life-1", "a1")
	linkAndReply(t, p, "manual-1", "b1")
	waitUntil(t, 5*time.Second, "both conversations", func() bool {
		return d.Do("GET", "/v1/renewal/conversations/manual-1", nil).Status == 200 && d.Do("GET", "/v1/renewal/conversations/life-1", nil).Status == 200
	})
	if r := d.Do("POST", "/v1/renewal/conversations/life-1/auto", nil); r.Status != 200 {
		t.Fatalf("auto: %d %s", r.Status, r.Body)
	}
	// First renewal: projected, delivered, acknowledged, done.
	var first jobView
	waitUntil(t, 10*time.Second, "a done renewal job", func() bool {
		js := jobsOf(t, d, "life-1").Jobs
		if len(js) > 0 && js[len(js)-1].Status == "done" {
			first = js[len(js)-1]
			return true
		}
		return false
	})
	if first.Message != "keep going" || first.Attempts != 1 || first.DeliveryAck == nil || first.DeliveryAck.Level != 1 || first.DeliveryAck.StatusCode != 200 || first.InjectID == "" {
		t.Fatalf("first job: %+v", first)
	}
	in, err := p.WaitFor(5*time.Second, bridgeproto.TypeConversationInject, func(m fakeplugin.Msg) bool {
		var x bridgeproto.ConversationInject
		return m.Decode(&x) == nil && x.Kind == "renewal" && x.InjectID == first.InjectID
	})
	if err != nil {
		t.Fatal(err)
	}
	var inj bridgeproto.ConversationInject
	_ = in.Decode(&inj)
	if inj.Text != "keep going" || inj.LocalConversationID != "life-1" || inj.RemoteConversationID != "r-life-1" {
		t.Fatalf("delivered: %+v", inj)
	}
	// The system state's queue and active runs come from the records (here
	// everything has settled or is about to: the numbers are consistent).
	var st struct {
		Data struct {
			Queue      struct{ Pending, Running int } `json:"queue"`
			ActiveRuns []struct{ ID, Kind string }    `json:"active_runs"`
		} `json:"data"`
	}
	d.Do("GET", "/v1/system/state", nil).Decode(t, &st)
	if st.Data.Queue.Running != len(st.Data.ActiveRuns) {
		t.Fatalf("queue %+v vs active runs %+v", st.Data.Queue, st.Data.ActiveRuns)
	}
	// No new reply comes: after 3 renewals the conversation pauses itself.
	waitUntil(t, 15*time.Second, "the automatic pause after repeated renewals", func() bool {
		return convOf(t, d, "life-1")["automation_status"] == "paused"
	})
	c := convOf(t, d, "life-1")
	if c["repeated_renewal_count"].(float64) != 3 || c["pause_reason"] == "" || c["last_non_paused_automation_status"] != "auto" || c["execution_state"] != "idle" {
		t.Fatalf("after the repeat limit: %v", c)
	}
	js := jobsOf(t, d, "life-1").Jobs
	if len(js) != 3 {
		t.Fatalf("%d jobs, want 3 (never a second pending one, none after the pause): %+v", len(js), js)
	}
	// Every job was delivered exactly once.
	injections := map[string]int{}
	for _, m := range p.Messages() {
		var x bridgeproto.ConversationInject
		if m.Type == bridgeproto.TypeConversationInject && m.Decode(&x) == nil && x.Kind == "renewal" {
			injections[x.InjectID]++
		}
	}
	for _, j := range js {
		if injections[j.InjectID] != 1 {
			t.Fatalf("job %s delivered %d times", j.ID, injections[j.InjectID])
		}
	}
	// The manual conversation never got a job.
	if n := len(jobsOf(t, d, "manual-1").Jobs); n != 0 {
		t.Fatalf("manual conversation has %d jobs", n)
	}
	wantError(t, d.Do("GET", "/v1/renewal/jobs?local_conversation_id=nope", nil), 404, "unknown_conversation")
	wantError(t, d.Do("GET", "/v1/renewal/jobs?limit=501", nil), 422, "invalid_query")
}

// Failed deliveries count up to an automatic pause with a reason.
func TestRenewalFailuresPause(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, schedEnv()...)
	p := connectPlugin(t, d, "failing-plugin", nil, func(o *fakeplugin.Options) {
		o.OnInject = func(bridgeproto.ConversationInject) *bridgeproto.InjectResult {
			return &bridgeproto.InjectResult{OK: false, Error: &bridgeproto.ErrorBody{Code: "input_not_found", Message: "no input box"}}
		}
	})
	linkAndReply(t, p, "fail-1", "a1")
	waitUntil(t, 5*time.Second, "the conversation", func() bool { return d.Do("GET", "/v1/renewal/conversations/fail-1", nil).Status == 200 })
	d.Do("POST", "/v1/renewal/conversations/fail-1/auto", nil)
	waitUntil(t, 15*time.Second, "the automatic pause after failures", func() bool { return convOf(t, d, "fail-1")["automation_status"] == "paused" })
	c := convOf(t, d, "fail-1")
	if c["consecutive_failure_count"].(float64) != 2 || c["last_error"] == "" {
		t.Fatalf("after the failure limit: %v", c)
	}
	for _, j := range jobsOf(t, d, "fail-1").Jobs {
		if j.Status != "failed" || j.LastError == "" {
			t.Fatalf("job: %+v", j)
		}
	}
}

// A paused system skips whole ticks (recorded as skipped_system_paused);
// resume leaves manual and paused conversations alone; the scheduler worker
// can be SIGKILLed: the daemon stays up, the worker comes back, no job runs
// twice.
func TestRenewalSystemPauseAndWorkerKill(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, schedEnv("SVC_RENEWAL_MAX_RENEWALS=100")...)
	p := connectPlugin(t, d, "pause-plugin", nil)
	linkAndReply(t, p, "sp-1", "a1")
	waitUntil(t, 5*time.Second, "the conversation", func() bool { return d.Do("GET", "/v1/renewal/conversations/sp-1", nil).Status == 200 })
	d.Do("POST", "/v1/system/pause", nil)
	d.Do("POST", "/v1/renewal/conversations/sp-1/auto", nil)
	before := jobsOf(t, d, "sp-1").Ticks.SkippedSystemPaused
	waitUntil(t, 5*time.Second, "skipped ticks", func() bool { return jobsOf(t, d, "sp-1").Ticks.SkippedSystemPaused >= before+3 })
	if n := len(jobsOf(t, d, "sp-1").Jobs); n != 0 {
		t.Fatalf("%d jobs while the system is paused", n)
	}
	if r := d.Do("POST", "/v1/system/resume", nil); r.Status != 200 {
		t.Fatal(r.Status)
	}
	if c := convOf(t, d, "sp-1"); c["automation_status"] != "auto" {
		t.Fatalf("resume changed the conversation: %v", c)
	}
	waitUntil(t, 10*time.Second, "a renewal after resume", func() bool { return len(jobsOf(t, d, "sp-1").Jobs) >= 1 })

	// SIGKILL the scheduler worker a few times while renewals run.
	for i := 0; i < 3; i++ {
		var sched workerInfo
		waitUntil(t, 10*time.Second, "the scheduler worker running", func() bool {
			for _, w := range workersOf(t, d) {
				if w.Name == "scheduler" && w.State == "running" && w.Pid != 0 {
					sched = w
					return true
				}
			}
			return false
		})
		_ = syscall.Kill(sched.Pid, syscall.SIGKILL)
		if r := d.Do("GET", "/healthz", nil); r.Status != 200 {
			t.Fatalf("the daemon went down with its scheduler: %d", r.Status)
		}
		time.Sleep(350 * time.Millisecond)
	}
	n := len(jobsOf(t, d, "sp-1").Jobs)
	waitUntil(t, 15*time.Second, "renewals after the kills", func() bool { return len(jobsOf(t, d, "sp-1").Jobs) >= n+2 })
	d.Do("POST", "/v1/renewal/conversations/sp-1/manual", nil)
	time.Sleep(300 * time.Millisecond)
	js := jobsOf(t, d, "sp-1").Jobs
	injections := map[string]int{}
	for _, m := range p.Messages() {
		var x bridgeproto.ConversationInject
		if m.Type == bridgeproto.TypeConversationInject && json.Unmarshal(m.Raw, &x) == nil && x.Kind == "renewal" {
			injections[x.InjectID]++
		}
	}
	total := 0
	for _, j := range js {
		if j.InjectID != "" {
			total++
			if injections[j.InjectID] != 1 {
				t.Fatalf("job %s delivered %d times", j.ID, injections[j.InjectID])
			}
		}
	}
	sent := 0
	for _, c := range injections {
		sent += c
	}
	if sent != total {
		t.Fatalf("%d renewal injections for %d delivered jobs: a job ran twice or an injection was not recorded", sent, total)
	}
}
