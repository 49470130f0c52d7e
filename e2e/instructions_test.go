package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// instrDaemon starts one daemon for the instruction tests with a small round
// limit, so the loop limit is reached in a few messages.
// Commands may write under writeRoot (their markers), beyond their scratch
// directories.
func instrDaemon(t *testing.T, writeRoot string) *harness.Daemon {
	t.Helper()
	return instrDaemonTimeout(t, writeRoot, 3000)
}

// instrDaemonTimeout is instrDaemon with another per-block timeout.
func instrDaemonTimeout(t *testing.T, writeRoot string, blockTimeoutMs int) *harness.Daemon {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "svcd.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("instr_max_rounds = 3\ninstr_block_timeout_ms = %d\n", blockTimeoutMs)), 0o600); err != nil {
		t.Fatal(err)
	}
	return harness.Start(t, harness.Options{Args: []string{"-config", cfg}, Env: []string{"SVC_EXEC_WRITE_ROOTS=" + writeRoot}})
}

type instrOutcome struct {
	Label      string `json:"label"`
	Status     string `json:"status"`
	OK         bool   `json:"ok"`
	HTTPStatus int    `json:"http_status"`
	Output     string `json:"output"`
	Error      *struct {
		Code string `json:"code"`
	} `json:"error"`
}

type instrRun struct {
	TaskID  string         `json:"task_id"`
	Status  string         `json:"status"`
	Report  string         `json:"report"`
	Results []instrOutcome `json:"results"`
	Dropped []struct {
		Reason string `json:"reason"`
	} `json:"dropped"`
}

type instrIngest struct {
	Ingest struct {
		Status               string `json:"status"`
		RepeatedMessageCount int    `json:"repeated_message_count"`
		Round                int    `json:"round"`
		SystemPaused         bool   `json:"system_paused"`
		TaskID               string `json:"task_id"`
		TaskStatus           string `json:"task_status"`
		InjectID             string `json:"inject_id"`
		Report               string `json:"report"`
		Results              []instrOutcome
	} `json:"ingest"`
	Conversation struct {
		ExecutionState       string `json:"execution_state"`
		AutomationStatus     string `json:"automation_status"`
		PauseReason          string `json:"pause_reason"`
		RepeatedMessageCount int    `json:"repeated_message_count"`
	} `json:"conversation"`
}

func block(header string, body ...string) string {
	return "```instr\n" + strings.Join(append([]string{header}, body...), "\n") + "\n```\n"
}

func runInstr(t *testing.T, d *harness.Daemon, text string, auth bool) instrRun {
	t.Helper()
	var r *harness.Response
	if auth {
		r = d.DoAuth("POST", "/v1/instructions/run", map[string]string{"text": text})
	} else {
		r = d.Do("POST", "/v1/instructions/run", map[string]string{"text": text})
	}
	if r.Status != 200 {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	var env struct{ Data instrRun }
	r.Decode(t, &env)
	return env.Data
}

var msgSeq atomic.Int64

func ingest(t *testing.T, d *harness.Daemon, conv, msgID, text string, auth bool, extra ...string) instrIngest {
	t.Helper()
	if msgID == "" {
		msgID = fmt.Sprintf("m-%d", msgSeq.Add(1))
	}
	body := map[string]string{"platform": "platform_a", "local_conversation_id": conv, "remote_conversation_id": "r-" + conv, "message_id": msgID, "text": text}
	if len(extra) == 2 {
		body[extra[0]] = extra[1]
	}
	var r *harness.Response
	if auth {
		r = d.DoAuth("POST", "/v1/instructions/ingest", body)
	} else {
		r = d.Do("POST", "/v1/instructions/ingest", body)
	}
	if r.Status != 200 {
		t.Fatalf("ingest: %d %s", r.Status, r.Body)
	}
	var env struct{ Data instrIngest }
	r.Decode(t, &env)
	return env.Data
}

func TestInstructions(t *testing.T) {
	dir := t.TempDir()
	d := instrDaemon(t, dir)

	t.Run("run: report format and structured results", func(t *testing.T) {
		res := runInstr(t, d, "Checking.\n"+block("@svc::exec::echo hello")+"and\n"+block("@system::status")+block("@svc::nope"), true)
		if !strings.HasPrefix(res.Report, "[instr-result] svcd instruction results\n-- @svc::exec --\n成功\nhello\n\n-- @system::status --\n成功\n{") {
			t.Fatalf("report:\n%s", res.Report)
		}
		if !strings.Contains(res.Report, "\n\n-- @svc::nope --\n失败\nunknown tool \"nope\"") {
			t.Fatalf("unknown tool section:\n%s", res.Report)
		}
		if len(res.Results) != 3 || !res.Results[0].OK || !res.Results[1].OK || res.Results[2].OK || res.Status != "partially_failed" || res.TaskID == "" {
			t.Fatalf("results %+v status %s", res.Results, res.Status)
		}
	})

	t.Run("run: parallel blocks, one failing", func(t *testing.T) {
		// Each block announces itself, then waits for the other two: run one
		// after another, the first would wait for files that never come.
		// The meeting must not race a clock: under a parallel make test the
		// three sandboxed starts were more than the 3 s block timeout of d
		// apart ("POST /v1/exec did not finish within 3000 ms"), so these
		// blocks run on a daemon that gives each 60 s, and wait up to 25 s
		// for each other (within exec's default 30 s timeout; run one after
		// another they still never meet).
		pd := instrDaemonTimeout(t, dir, 60000)
		var text string
		for i := 0; i < 3; i++ {
			text += block("@svc::exec", fmt.Sprintf("touch %s/p%d; for n in $(seq 1 500); do [ -e %s/p0 ] && [ -e %s/p1 ] && [ -e %s/p2 ] && break; sleep 0.05; done; [ -e %s/p0 ] && [ -e %s/p1 ] && [ -e %s/p2 ] && echo met-%d", dir, i, dir, dir, dir, dir, dir, dir, i))
		}
		text += block("@svc::exec::echo partial; exit 3")
		res := runInstr(t, pd, text, true)
		for i := 0; i < 3; i++ {
			if o := res.Results[i]; !o.OK || !strings.Contains(o.Output, fmt.Sprintf("met-%d", i)) {
				t.Fatalf("block %d did not run alongside the others: %+v", i, o)
			}
		}
		if o := res.Results[3]; o.OK || !strings.HasPrefix(o.Output, "exit code 3") || !strings.Contains(o.Output, "partial") {
			t.Fatalf("failing block: %+v", o)
		}
		if !strings.Contains(res.Report, "-- @svc::exec #4 --\n失败\nexit code 3") {
			t.Fatalf("report:\n%s", res.Report)
		}
	})

	t.Run("run: per-block timeout fails that block only", func(t *testing.T) {
		res := runInstr(t, d, block("@svc::exec::{\"command\":\"sleep 20\",\"timeoutMs\":30000}")+block("@svc::exec::echo quick"), true)
		if o := res.Results[0]; o.OK || o.Error == nil || o.Error.Code != "timeout" || !strings.Contains(res.Report, "失败\nPOST /v1/exec did not finish within 3000 ms") {
			t.Fatalf("slow block: %+v\n%s", o, res.Report)
		}
		if !res.Results[1].OK {
			t.Fatalf("quick block: %+v", res.Results[1])
		}
	})

	t.Run("run: host ops need the caller's own token", func(t *testing.T) {
		res := runInstr(t, d, block("@svc::exec::echo should-not-run")+block("@svc::files/read::/etc/hostname")+block("@svc::status"), false)
		for _, o := range res.Results[:2] {
			if o.OK || o.HTTPStatus != 401 || !strings.Contains(o.Output, "unauthorized") {
				t.Fatalf("host op without token: %+v", o)
			}
		}
		if !res.Results[2].OK {
			t.Fatalf("status needs no token: %+v", res.Results[2])
		}
	})

	t.Run("run: superseded formats refused, dropped blocks listed", func(t *testing.T) {
		res := runInstr(t, d, "::myhost::shell touch "+dir+"/legacy\n@system::shell::{\"command\":\"touch "+dir+"/legacy\"} /@\n"+block("@svc:status")+"```instr\n@svc::exec::echo cut", true)
		if len(res.Results) != 2 || res.Results[0].OK || res.Results[0].Status != "refused" || !strings.Contains(res.Report, "失败\nthe double-colon host/shell format is superseded") {
			t.Fatalf("superseded: %+v\n%s", res.Results, res.Report)
		}
		if len(res.Dropped) != 2 || res.Dropped[0].Reason != "first_line_not_an_instruction" || res.Dropped[1].Reason != "unterminated_fence" {
			t.Fatalf("dropped %+v", res.Dropped)
		}
		if _, err := os.Stat(dir + "/legacy"); err == nil {
			t.Fatal("a superseded instruction ran")
		}
	})

	t.Run("run: bad bodies", func(t *testing.T) {
		if r := d.Do("POST", "/v1/instructions/run", map[string]string{}); r.Status != 422 {
			t.Fatalf("missing text: %d %s", r.Status, r.Body)
		}
		if r := d.Do("POST", "/v1/instructions/run", map[string]string{"text": strings.Repeat("x", 300<<10)}); r.Status != 413 || !strings.Contains(string(r.Body), "text_too_large") {
			t.Fatalf("text over the cap: %d %.200s", r.Status, r.Body)
		}
		if r := d.Do("POST", "/v1/instructions/run", map[string]any{"text": "", "extra": 1}); r.Status != 422 {
			t.Fatalf("unknown field: %d %s", r.Status, r.Body)
		}
		if r := d.Do("POST", "/v1/instructions/ingest", map[string]string{"platform": "platform_a", "local_conversation_id": "c", "remote_conversation_id": "r", "message_id": "m", "text": "", "role": "system"}); r.Status != 422 || !strings.Contains(string(r.Body), "invalid_role") {
			t.Fatalf("bad role: %d %s", r.Status, r.Body)
		}
		if r := d.Do("POST", "/v1/instructions/run", "{not json", "Content-Type: application/json"); r.Status != 400 {
			t.Fatalf("malformed: %d %s", r.Status, r.Body)
		}
		if r := d.Do("POST", "/v1/instructions/ingest", map[string]string{"platform": "platform_x", "local_conversation_id": "c", "remote_conversation_id": "r", "message_id": "m", "text": ""}); r.Status != 422 || !strings.Contains(string(r.Body), "invalid_platform") {
			t.Fatalf("bad platform: %d %s", r.Status, r.Body)
		}
		if r := d.Do("POST", "/v1/instructions/ingest", map[string]string{"platform": "platform_a", "local_conversation_id": "bad id", "remote_conversation_id": "r", "message_id": "m", "text": ""}); r.Status != 422 {
			t.Fatalf("bad conversation id: %d %s", r.Status, r.Body)
		}
		// The HTTP route applies the bridge's own rules: the same bounds, the
		// field named in the code.
		for _, c := range []struct{ field, value, code string }{
			{"local_conversation_id", "bad id", "invalid_local_conversation_id"},
			{"remote_conversation_id", strings.Repeat("r", bridgeproto.MaxLabelLen+1), "invalid_remote_conversation_id"},
			{"remote_conversation_id", "", "missing_field"},
			{"message_id", strings.Repeat("m", bridgeproto.MaxIDLen+1), "invalid_message_id"},
			{"message_id", "has space", "invalid_message_id"},
		} {
			body := map[string]string{"platform": "platform_a", "local_conversation_id": "c", "remote_conversation_id": "r", "message_id": "m", "text": ""}
			body[c.field] = c.value
			if r := d.Do("POST", "/v1/instructions/ingest", body); r.Status != 422 || !strings.Contains(string(r.Body), `"`+c.code+`"`) {
				t.Fatalf("%s=%.20q: want 422 %s, got %d %s", c.field, c.value, c.code, r.Status, r.Body)
			}
			msg := bridgeproto.ConversationMessage{ConversationRef: bridgeproto.ConversationRef{Platform: body["platform"],
				LocalConversationID: body["local_conversation_id"], RemoteConversationID: body["remote_conversation_id"]}, MessageID: body["message_id"]}
			if msg.Validate() == nil {
				t.Fatalf("%s=%.20q: the bridge accepts what the HTTP route refuses", c.field, c.value)
			}
		}
	})

	t.Run("ingest: executes, injects, duplicates never run twice", func(t *testing.T) {
		// A plugin holds the conversation, so the report goes back to it.
		p := connectPlugin(t, d, "instr-holder", nil)
		if err := p.Send(bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, ConversationRef: bridgeproto.ConversationRef{
			Platform: "platform_a", LocalConversationID: "conv-dup", RemoteConversationID: "r-conv-dup"}}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 5*time.Second, "the link", func() bool {
			return strings.Contains(string(d.Do("GET", "/v1/renewal/conversations/conv-dup", nil).Body), "instr-holder")
		})
		log := dir + "/dup.log"
		text := block("@svc::exec::echo once >> " + log)
		first := ingest(t, d, "conv-dup", "msg-1", text, true)
		if first.Ingest.Status != "executed" || first.Ingest.InjectID == "" || first.Ingest.TaskStatus != "succeeded" || !strings.HasPrefix(first.Ingest.Report, "[instr-result]") {
			t.Fatalf("first: %+v", first.Ingest)
		}
		inj, err := p.WaitFor(5*time.Second, bridgeproto.TypeConversationInject, nil)
		if err != nil {
			t.Fatal(err)
		}
		var in bridgeproto.ConversationInject
		_ = inj.Decode(&in)
		if in.Kind != "instruction_report" || in.LocalConversationID != "conv-dup" || in.Text != first.Ingest.Report || in.InjectID != first.Ingest.InjectID {
			t.Fatalf("injected: %+v", in)
		}
		if first.Conversation.ExecutionState != "idle" {
			t.Fatalf("execution_state after the batch: %q", first.Conversation.ExecutionState)
		}
		for i := 1; i <= 2; i++ {
			again := ingest(t, d, "conv-dup", "msg-1", text, true)
			if again.Ingest.Status != "repeated" || again.Ingest.RepeatedMessageCount != i || again.Conversation.RepeatedMessageCount != i {
				t.Fatalf("repeat %d: %+v", i, again)
			}
		}
		b, _ := os.ReadFile(log)
		if string(b) != "once\n" {
			t.Fatalf("the repeated message ran again: %q", b)
		}
		own := ingest(t, d, "conv-dup", "", first.Ingest.Report+"\n"+text, true)
		if own.Ingest.Status != "own_report" {
			t.Fatalf("a report was executed: %+v", own.Ingest)
		}
	})

	t.Run("ingest: the conversation is instruction_running meanwhile", func(t *testing.T) {
		done := make(chan instrIngest, 1)
		go func() { done <- ingest(t, d, "conv-running", "slow", block("@svc::exec::sleep 1"), true) }()
		seen, finished := false, false
		var res instrIngest
		for i := 0; i < 200 && !seen && !finished; i++ {
			// A probe without instructions reads the conversation's state.
			probe := ingest(t, d, "conv-running", fmt.Sprintf("probe-%d", i), "just text", true)
			seen = probe.Conversation.ExecutionState == "instruction_running"
			select {
			case res = <-done:
				finished = true
			default:
			}
		}
		if !seen {
			t.Fatal("never saw instruction_running while the batch ran")
		}
		if !finished {
			res = <-done
		}
		if res.Ingest.Status != "executed" || res.Conversation.ExecutionState != "idle" {
			t.Fatalf("after: %+v %+v", res.Ingest.Status, res.Conversation)
		}
	})

	t.Run("ingest: host ops refused without the token", func(t *testing.T) {
		res := ingest(t, d, "conv-notoken", "", block("@svc::exec::touch "+dir+"/notoken"), false)
		if o := res.Ingest.Results[0]; o.OK || o.HTTPStatus != 401 || !strings.Contains(res.Ingest.Report, "失败\nHTTP 401 unauthorized") {
			t.Fatalf("%+v\n%s", o, res.Ingest.Report)
		}
		if _, err := os.Stat(dir + "/notoken"); err == nil {
			t.Fatal("exec ran without the token")
		}
	})

	t.Run("ingest: paused system records system_paused; control instructions still run", func(t *testing.T) {
		if r := d.Do("POST", "/v1/system/pause", map[string]string{"reason": "test"}); r.Status != 200 {
			t.Fatalf("pause: %d %s", r.Status, r.Body)
		}
		res := ingest(t, d, "conv-paused", "", block("@svc::exec::touch "+dir+"/paused")+block("@svc::conversation/pause::{\"scope\":\"current\"}"), true)
		if !res.Ingest.SystemPaused || res.Ingest.TaskStatus != "system_paused" || res.Ingest.Results[0].Status != "system_paused" || !strings.Contains(res.Ingest.Report, "失败\nthe system is paused") {
			t.Fatalf("paused ingest: %+v\n%s", res.Ingest, res.Ingest.Report)
		}
		if _, err := os.Stat(dir + "/paused"); err == nil {
			t.Fatal("an ordinary instruction ran while paused")
		}
		res = ingest(t, d, "conv-paused", "", block("@system::system/resume::{\"reason\":\"ai resumes\"}")+block("@svc::exec::touch "+dir+"/paused"), true)
		if !res.Ingest.Results[0].OK || res.Ingest.Results[1].Status != "system_paused" {
			t.Fatalf("resume while paused: %+v", res.Ingest.Results)
		}
		var st struct {
			Data struct {
				Mode        string `json:"mode"`
				RequestedBy string `json:"requested_by"`
			}
		}
		d.Do("GET", "/v1/system/state", nil).Decode(t, &st)
		if st.Data.Mode != "running" || st.Data.RequestedBy != "instruction" {
			t.Fatalf("state after system/resume: %+v", st.Data)
		}
		res = ingest(t, d, "conv-paused", "", block("@system::system/pause::{\"reason\":\"ai pauses\"}"), true)
		d.Do("GET", "/v1/system/state", nil).Decode(t, &st)
		if !res.Ingest.Results[0].OK || st.Data.Mode != "paused" {
			t.Fatalf("system/pause: %+v mode %s", res.Ingest.Results, st.Data.Mode)
		}
		d.Do("POST", "/v1/system/resume", map[string]string{})
	})

	t.Run("ingest: conversation controls act on the current conversation", func(t *testing.T) {
		res := ingest(t, d, "conv-ctl", "", block("@svc::conversation/pause::{\"scope\":\"current\",\"reason\":\"waiting for user\"}"), true)
		if !res.Ingest.Results[0].OK || res.Conversation.AutomationStatus != "paused" || res.Conversation.PauseReason != "waiting for user" {
			t.Fatalf("pause: %+v %+v", res.Ingest.Results, res.Conversation)
		}
		res = ingest(t, d, "conv-ctl", "", block("@svc::conversation/resume::{\"scope\":\"current\"}"), true)
		if !res.Ingest.Results[0].OK || res.Conversation.AutomationStatus == "paused" {
			t.Fatalf("resume: %+v %+v", res.Ingest.Results, res.Conversation)
		}
		res = ingest(t, d, "conv-ctl", "", block("@svc::conversation/mode::{\"scope\":\"current\",\"mode\":\"auto\"}")+block("@svc::conversation/pause::{\"scope\":\"all\"}"), true)
		if !res.Ingest.Results[0].OK || res.Conversation.AutomationStatus != "auto" || res.Ingest.Results[1].OK || !strings.Contains(res.Ingest.Results[1].Output, "scope \"all\" is not supported") {
			t.Fatalf("mode/scope: %+v %+v", res.Ingest.Results, res.Conversation)
		}
		run := runInstr(t, d, block("@svc::conversation/pause"), true)
		if run.Results[0].OK || run.Results[0].Error.Code != "no_current_conversation" {
			t.Fatalf("conversation control without a conversation: %+v", run.Results)
		}
	})

	t.Run("ingest: the daemon enforces the round limit per conversation", func(t *testing.T) {
		text := block("@svc::status")
		for i := 1; i <= 3; i++ {
			if res := ingest(t, d, "conv-loop", "", text, true); res.Ingest.Status != "executed" || res.Ingest.Round != i {
				t.Fatalf("round %d: %+v", i, res.Ingest)
			}
		}
		res := ingest(t, d, "conv-loop", "", text, true)
		if res.Ingest.Status != "round_limit_reached" || res.Ingest.InjectID != "" || res.Ingest.TaskStatus != "round_limit_reached" {
			t.Fatalf("fourth round: %+v", res.Ingest)
		}
		if other := ingest(t, d, "conv-other", "", text, true); other.Ingest.Status != "executed" {
			t.Fatalf("another conversation is limited too: %+v", other.Ingest)
		}
		if u := ingest(t, d, "conv-loop", "", "please go on", true, "role", "user"); u.Ingest.Status != "user_message" {
			t.Fatalf("user message: %+v", u.Ingest)
		}
		if res := ingest(t, d, "conv-loop", "", text, true); res.Ingest.Status != "executed" || res.Ingest.Round != 1 {
			t.Fatalf("after the user spoke: %+v", res.Ingest)
		}
	})

	t.Run("describe lists the routes and the report format", func(t *testing.T) {
		body := string(d.Do("GET", "/describe/business", nil).Body)
		for _, want := range []string{"/v1/instructions/run", "/v1/instructions/ingest", "[instr-result] svcd instruction results", "files/write"} {
			if !strings.Contains(body, want) {
				t.Fatalf("describe lacks %q", want)
			}
		}
	})
}
