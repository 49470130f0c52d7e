package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

type convView struct {
	LocalID                       string `json:"local_conversation_id"`
	Platform                      string `json:"platform"`
	RemoteID                      string `json:"remote_conversation_id"`
	AutomationStatus              string `json:"automation_status"`
	PauseReason                   string `json:"pause_reason"`
	ExecutionState                string `json:"execution_state"`
	RepeatedMessageCount          int    `json:"repeated_message_count"`
	LastNonPausedAutomationStatus string `json:"last_non_paused_automation_status"`
}

// Conversations are one durable record each: created by the first message
// (or link), switched manual/auto/paused by the routes, pushed to every
// plugin in state_snapshot, kept across a restart, and untouched by system
// pause and resume.
func TestRenewalConversationRoutes(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "conv-plugin", nil, func(o *fakeplugin.Options) { o.Manual = true })
	ingest := func(msgID string) {
		t.Helper()
		r := d.Do("POST", "/v1/instructions/ingest", map[string]any{"platform": "platform_a", "local_conversation_id": "conv-1",
			"remote_conversation_id": "remote-7", "message_id": msgID, "text": "no instructions here"})
		if r.Status != 200 {
			t.Fatalf("ingest: %d %s", r.Status, r.Body)
		}
	}
	ingest("m1")
	ingest("m1") // a repeat is counted
	get := func() convView {
		t.Helper()
		var env struct{ Data convView }
		d.Do("GET", "/v1/renewal/conversations/conv-1", nil).Decode(t, &env)
		return env.Data
	}
	c := get()
	if c.AutomationStatus != "manual" || c.ExecutionState != "idle" || c.RemoteID != "remote-7" || c.Platform != "platform_a" || c.RepeatedMessageCount != 1 {
		t.Fatalf("new conversation: %+v", c)
	}
	snapshots := p.Count(bridgeproto.TypeStateSnapshot)
	if r := d.Do("POST", "/v1/renewal/conversations/conv-1/auto", nil); r.Status != 200 {
		t.Fatalf("auto: %d %s", r.Status, r.Body)
	}
	if r := d.Do("POST", "/v1/renewal/conversations/conv-1/paused", map[string]string{"pause_reason": "lunch"}); r.Status != 200 {
		t.Fatalf("paused: %d %s", r.Status, r.Body)
	}
	c = get()
	if c.AutomationStatus != "paused" || c.PauseReason != "lunch" || c.LastNonPausedAutomationStatus != "auto" {
		t.Fatalf("after auto, paused: %+v", c)
	}
	// The plugins hear about every switch in the next state_snapshot.
	if err := p.WaitCount(5*time.Second, bridgeproto.TypeStateSnapshot, snapshots+2); err != nil {
		t.Fatal(err)
	}
	last := p.Messages()
	var snap bridgeproto.StateSnapshot
	for i := len(last) - 1; i >= 0; i-- {
		if last[i].Type == bridgeproto.TypeStateSnapshot {
			_ = last[i].Decode(&snap)
			break
		}
	}
	ac := snap.Browser.AutomationConversations
	if len(ac) != 1 || ac[0].LocalConversationID != "conv-1" || ac[0].AutomationStatus != "paused" || ac[0].PauseReason != "lunch" || ac[0].RemoteConversationID != "remote-7" {
		t.Fatalf("automation_conversations in the snapshot: %+v", ac)
	}
	// System pause and resume change only the system gate.
	d.Do("POST", "/v1/system/pause", nil)
	d.Do("POST", "/v1/system/resume", nil)
	if c2 := get(); c2.AutomationStatus != "paused" || c2.PauseReason != "lunch" || c2.LastNonPausedAutomationStatus != "auto" {
		t.Fatalf("system pause/resume touched the conversation: %+v", c2)
	}
	// Bad input: clear errors, nothing changes.
	wantError(t, d.Do("GET", "/v1/renewal/conversations/nope", nil), 404, "unknown_conversation")
	wantError(t, d.Do("POST", "/v1/renewal/conversations/nope/auto", nil), 404, "unknown_conversation")
	wantError(t, d.Do("GET", "/v1/renewal/conversations/bad%20id", nil), 422, "invalid_local_conversation_id")
	wantError(t, d.Do("POST", "/v1/renewal/conversations/conv-1/manual", map[string]string{"pause_reason": "x"}), 422, "invalid_field")
	wantError(t, d.Do("POST", "/v1/renewal/conversations/conv-1/paused", map[string]string{"reason": "x"}), 422, "unknown_field")
	wantError(t, d.Do("GET", "/v1/renewal/conversations?limit=0", nil), 422, "invalid_query")
	wantError(t, d.Do("GET", "/v1/renewal/conversations?limit=x", nil), 400, "invalid_query")
	if c3 := get(); c3.AutomationStatus != "paused" {
		t.Fatalf("a refused write changed the record: %+v", c3)
	}
	// The panel lists the conversation with its switch and reason.
	if panel := string(d.Do("GET", "/v1/status/ui", nil).Body); !strings.Contains(panel, "Conversation conv-1") || !strings.Contains(panel, "lunch") {
		t.Fatalf("panel lacks the conversation:\n%s", panel)
	}
	// Durable: the record survives a restart.
	d.Restart()
	if c4 := get(); c4.AutomationStatus != "paused" || c4.PauseReason != "lunch" || c4.RepeatedMessageCount != 1 {
		t.Fatalf("after restart: %+v", c4)
	}
}

// Instruction batches are tasks with a run and logs; the query routes take
// their documented limits and refuse bad values.
func TestTaskAndControllerRoutes(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	r := d.Do("POST", "/v1/instructions/run", map[string]string{"text": "```instr\n@svc::status\n```\n```instr\n@svc::describe\n```"})
	if r.Status != 200 {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	var list struct {
		Data struct {
			Tasks []struct {
				ID     string   `json:"task_id"`
				Kind   string   `json:"kind"`
				Status string   `json:"status"`
				RunIDs []string `json:"run_ids"`
			} `json:"tasks"`
		} `json:"data"`
	}
	d.Do("GET", "/v1/tasks?status=succeeded&limit=5", nil).Decode(t, &list)
	if len(list.Data.Tasks) != 1 || list.Data.Tasks[0].Kind != "instruction_batch" || len(list.Data.Tasks[0].RunIDs) != 1 {
		t.Fatalf("tasks: %+v", list.Data.Tasks)
	}
	task := list.Data.Tasks[0]
	if g := d.Do("GET", "/v1/tasks/"+task.ID, nil); g.Status != 200 || !strings.Contains(string(g.Body), task.RunIDs[0]) {
		t.Fatalf("task: %d %s", g.Status, g.Body)
	}
	var logs struct {
		Data struct {
			Runs []struct {
				RunID string                  `json:"run_id"`
				Lines []struct{ Line string } `json:"lines"`
			} `json:"runs"`
		} `json:"data"`
	}
	d.Do("GET", "/v1/tasks/"+task.ID+"/logs?run_id="+task.RunIDs[0]+"&limit=1", nil).Decode(t, &logs)
	if len(logs.Data.Runs) != 1 || len(logs.Data.Runs[0].Lines) != 1 {
		t.Fatalf("logs limit=1: %+v", logs.Data.Runs)
	}
	wantError(t, d.Do("GET", "/v1/tasks?limit=501", nil), 422, "invalid_query")
	wantError(t, d.Do("GET", "/v1/tasks?limit=abc", nil), 400, "invalid_query")
	wantError(t, d.Do("GET", "/v1/tasks?status=done", nil), 422, "invalid_query")
	wantError(t, d.Do("GET", "/v1/tasks/task-999", nil), 404, "unknown_task")
	wantError(t, d.Do("GET", "/v1/tasks/"+task.ID+"/logs?run_id=run-x", nil), 404, "unknown_run")
	wantError(t, d.Do("GET", "/v1/tasks/"+task.ID+"/logs?limit=201", nil), 422, "invalid_query")

	var ctl struct {
		Data struct {
			Controllers []struct {
				NodeID string `json:"node_id"`
				Role   string `json:"role"`
			} `json:"controllers"`
			Leader struct {
				NodeID string `json:"node_id"`
			} `json:"leader"`
		} `json:"data"`
	}
	d.Do("GET", "/v1/controllers?limit=10", nil).Decode(t, &ctl)
	if len(ctl.Data.Controllers) != 1 || ctl.Data.Controllers[0].Role != "leader" || ctl.Data.Leader.NodeID != "node1" {
		t.Fatalf("controllers: %+v", ctl.Data)
	}
	wantError(t, d.Do("GET", "/v1/controllers?limit=0", nil), 422, "invalid_query")

	// The status panel shows recent tasks.
	if panel := string(d.Do("GET", "/v1/status/ui", nil).Body); !strings.Contains(panel, "Task "+task.ID) || !strings.Contains(panel, "instruction_batch") {
		t.Fatalf("panel lacks the task:\n%s", panel)
	}
}

// Live ingest over the bridge: the plugin reports a final AI reply with an
// instr block; the daemon runs it (host operations allowed: the plugin
// paired with the shared token), records the batch as a task, and types the
// report back into the conversation through the same plugin.
func TestLiveIngestOverTheBridge(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "live-plugin", nil)
	if err := p.Send(bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage,
		ConversationRef: bridgeproto.ConversationRef{Platform: "platform_b", LocalConversationID: "live-1", RemoteConversationID: "rb-1"},
		MessageID:       "reply-1", Text: "Here you go:\n```instr\n@svc::exec::echo from-the-bridge\n```\n"}); err != nil {
		t.Fatal(err)
	}
	inj, err := p.WaitFor(15*time.Second, bridgeproto.TypeConversationInject, nil)
	if err != nil {
		t.Fatal(err)
	}
	var in bridgeproto.ConversationInject
	_ = inj.Decode(&in)
	if in.Kind != "instruction_report" || in.LocalConversationID != "live-1" || !strings.Contains(in.Text, "成功") || !strings.Contains(in.Text, "from-the-bridge") {
		t.Fatalf("injected report: %+v", in)
	}
	var list struct {
		Data struct {
			Tasks []struct {
				ID     string `json:"task_id"`
				Status string `json:"status"`
				Kind   string `json:"kind"`
			} `json:"tasks"`
		} `json:"data"`
	}
	waitUntil(t, 5*time.Second, "the batch task", func() bool {
		d.Do("GET", "/v1/tasks", nil).Decode(t, &list)
		return len(list.Data.Tasks) == 1 && list.Data.Tasks[0].Status == "succeeded"
	})
	// The report's delivery_key names its task (and when the batch started,
	// so a fresh store's task-1 is not taken for an older one).
	if want := "report:" + list.Data.Tasks[0].ID + "."; !strings.HasPrefix(in.DeliveryKey, want) || !bridgeproto.ValidDeliveryKey(in.DeliveryKey) {
		t.Fatalf("report delivery_key %q, want %q and a start time", in.DeliveryKey, want)
	}
	// The same reply again is a repeat: counted, not run, nothing injected.
	before := p.Count(bridgeproto.TypeConversationInject)
	_ = p.Send(bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage,
		ConversationRef: bridgeproto.ConversationRef{Platform: "platform_b", LocalConversationID: "live-1", RemoteConversationID: "rb-1"},
		MessageID:       "reply-1", Text: "```instr\n@svc::exec::echo again\n```"})
	waitUntil(t, 5*time.Second, "the repeat to be counted", func() bool {
		var env struct{ Data convView }
		d.Do("GET", "/v1/renewal/conversations/live-1", nil).Decode(t, &env)
		return env.Data.RepeatedMessageCount == 1
	})
	if n := p.Count(bridgeproto.TypeConversationInject); n != before {
		t.Fatalf("a repeated reply was injected again (%d → %d)", before, n)
	}
	// An invalid conversation message gets an error frame and changes nothing.
	_ = p.Send(map[string]any{"type": "conversation_message", "platform": "platform_b", "local_conversation_id": "bad id", "remote_conversation_id": "r", "message_id": "m", "text": "x"})
	if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeError, nil); err != nil {
		t.Fatal(err)
	}
	// The extension's outbox may send a reply again after a daemon restart
	// (sent on a socket that died before the daemon read it, or before the
	// worker knew it went out): the id is remembered over the restart, so the
	// reply is a repeat there too, not a second execution.
	d.Restart()
	p2 := connectPlugin(t, d, "live-plugin", nil)
	_ = p2.Send(bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage,
		ConversationRef: bridgeproto.ConversationRef{Platform: "platform_b", LocalConversationID: "live-1", RemoteConversationID: "rb-1"},
		MessageID:       "reply-1", Text: "Here you go:\n```instr\n@svc::exec::echo from-the-bridge\n```\n"})
	waitUntil(t, 5*time.Second, "the repeat after the restart to be counted", func() bool {
		var env struct{ Data convView }
		d.Do("GET", "/v1/renewal/conversations/live-1", nil).Decode(t, &env)
		return env.Data.RepeatedMessageCount == 2
	})
	d.Do("GET", "/v1/tasks", nil).Decode(t, &list)
	if len(list.Data.Tasks) != 1 || p2.Count(bridgeproto.TypeConversationInject) != 0 {
		t.Fatalf("the reply sent again after a restart ran again: %d tasks, %d injects", len(list.Data.Tasks), p2.Count(bridgeproto.TypeConversationInject))
	}
}
