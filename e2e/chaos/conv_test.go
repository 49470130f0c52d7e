package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Conversations: each plugin holds two renewal conversations in auto. It
// reports AI replies carrying an instr block (an exec that appends the
// message id to a log, so the checker counts how often each batch ran),
// sometimes the same message id again; between replies a conversation goes
// quiet and the leader's scheduler types renewals into it through the
// plugin; now and then the client pauses a conversation for a while.

// convIDs are the conversations a plugin holds.
func convIDs(client string) []string {
	return []string{client + "-c1", client + "-c2"}
}

func convRef(id string) bridgeproto.ConversationRef {
	return bridgeproto.ConversationRef{Platform: bridgeproto.PlatformA, LocalConversationID: id, RemoteConversationID: "remote-" + id}
}

// link tells the daemon this connection holds the client's conversations.
func link(p interface{ Send(any) error }, client string) {
	for _, id := range convIDs(client) {
		_ = p.Send(bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, ConversationRef: convRef(id)})
	}
}

// convLog is where the instr blocks of conversation id append what ran.
func (r *rig) convLog(id string) string { return filepath.Join(r.workdir, "instr", id+".log") }

// conversationLoad drives one plugin's conversations until ctx ends.
func conversationLoad(ctx context.Context, r *rig, ps *plugins, client string, rnd *rand.Rand) {
	ids := convIDs(client)
	_ = os.MkdirAll(filepath.Join(r.workdir, "instr"), 0o755)
	sent := map[string][]string{}
	auto := func(id string) {
		for ctx.Err() == nil {
			if r.setConv(id, "auto", rnd) {
				return
			}
			pause(ctx, 200*time.Millisecond)
		}
	}
	for _, id := range ids {
		auto(id)
	}
	for pause(ctx, time.Duration(300+rnd.Intn(1500))*time.Millisecond) {
		id := ids[rnd.Intn(len(ids))]
		switch x := rnd.Intn(10); {
		case x < 7:
			ps.mu.Lock()
			p := ps.live[client]
			ps.mu.Unlock()
			if p == nil {
				continue
			}
			msg := r.hist.NewID("m")
			repeat := false
			// A repeat is any earlier id of the conversation, most of them
			// older than its last 64 replies in a long run: the store
			// remembers every id for 7 days (docs/instructions.md; a window
			// of 64 was the first 10-minute run's finding 4).
			if prev := sent[id]; len(prev) > 0 && rnd.Intn(5) == 0 {
				msg, repeat = prev[rnd.Intn(len(prev))], true
			}
			text := fmt.Sprintf("Here you go.\n```instr\n@svc::exec\necho %s >> %s\n```\n", msg, r.convLog(id))
			op := &Op{ID: r.hist.NewID("ai"), Kind: "ai_reply", Node: "plugin/" + client, Start: time.Now(), Outcome: "ok",
				Detail: map[string]any{"conversation": id, "message_id": msg, "repeat": repeat}}
			if err := p.Send(bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage, ConversationRef: convRef(id), MessageID: msg, Text: text}); err != nil {
				op.Outcome, op.Err = "info", shortErr(err) // never sent: the socket was closing
			}
			op.End = time.Now()
			r.hist.Add(op)
			if !repeat {
				sent[id] = append(sent[id], msg)
			}
		case x < 9:
			// quiet: let the scheduler renew
		default:
			if r.setConv(id, "paused", rnd) {
				pause(ctx, time.Duration(500+rnd.Intn(3000))*time.Millisecond)
			}
			auto(id)
		}
	}
}

// setConv switches a conversation through a random node and records it.
func (r *rig) setConv(id, status string, rnd *rand.Rand) bool {
	n := r.nodes[rnd.Intn(len(r.nodes))]
	op := &Op{ID: r.hist.NewID("cs"), Kind: "conv_" + status, Node: n.name, Start: time.Now(), Detail: map[string]any{"conversation": id}}
	var body any
	if status == "paused" {
		body = map[string]string{"pause_reason": "chaos " + op.ID}
	}
	a := r.call(context.Background(), n, "POST", "/v1/renewal/conversations/"+id+"/"+status, body, 5*time.Second)
	r.record(op, a)
	return op.Outcome == "ok"
}

type jobView struct {
	ID        string     `json:"job_id"`
	Conv      string     `json:"local_conversation_id"`
	Status    string     `json:"status"`
	Duplicate bool       `json:"duplicate"`
	CreatedAt time.Time  `json:"created_at"`
	StartedAt *time.Time `json:"started_at"`
}

type taskView struct {
	ID         string     `json:"task_id"`
	Kind       string     `json:"kind"`
	Conv       string     `json:"local_conversation_id"`
	Title      string     `json:"title"`
	Status     string     `json:"status"`
	Summary    string     `json:"summary"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

type span struct{ from, to time.Time }

func (s span) holds(t time.Time) bool { return t.After(s.from) && t.Before(s.to) }

// pausedSpans are, per conversation, the times it was surely paused: from
// the answer to an acknowledged pause to the start of the next switch.
func pausedSpans(ops []*Op, end time.Time) map[string][]span {
	out := map[string][]span{}
	open := map[string]*time.Time{}
	for _, op := range ops { // in the order they were recorded: per conversation, sequential
		id, _ := op.Detail["conversation"].(string)
		switch op.Kind {
		case "conv_paused":
			if op.Outcome == "ok" {
				t := op.End
				open[id] = &t
			}
		case "conv_auto":
			if from := open[id]; from != nil {
				out[id] = append(out[id], span{*from, op.Start})
				open[id] = nil
			}
		}
	}
	for id, from := range open {
		if from != nil {
			out[id] = append(out[id], span{*from, end})
		}
	}
	return out
}

// checkConversations: every instruction batch ran at most once per message
// id; every renewal typed at most once to the dedup plugin and at least
// once to the other; no renewal started while its conversation was paused
// or an instruction batch of it ran.
func checkConversations(r *rig, ps *plugins, ops []*Op, end time.Time) (broken, figures []string) {
	leader, err := r.byRole("leader")
	if err != nil {
		return []string{"conversation check: " + err.Error()}, nil
	}
	ran, sentIDs := 0, map[string]bool{}
	for _, op := range ops {
		if op.Kind == "ai_reply" && op.Outcome == "ok" {
			sentIDs[op.Detail["message_id"].(string)] = true
		}
	}
	// Nothing stays held: once the load stopped, every batch task ends
	// (its own finish, or the leader's reaper: a process gone, done with
	// it, or silent for 15 s) and no conversation stays
	// instruction_running, or renewals of it would stop for good.
	broken = append(broken, settledBatches(leader, 25*time.Second)...)
	var tasks []taskView
	if b, err := harness.Get(leader.url+"/v1/tasks?limit=500", 5*time.Second); err == nil {
		var env struct {
			Data struct {
				Tasks []taskView `json:"tasks"`
			} `json:"data"`
		}
		_ = json.Unmarshal(b, &env)
		tasks = env.Data.Tasks
	} else {
		broken = append(broken, "tasks: "+err.Error())
	}
	batches := map[string][]span{}
	batchStatus, firstFailure := map[string]int{}, ""
	for _, t := range tasks {
		if f := strings.Fields(t.Title); t.Conv == "" && len(f) == 3 && f[0] == "ingest" {
			// An ingest's task names its conversation in the title only
			// ("ingest <conversation> <message id>").
			t.Conv = f[1]
		}
		if t.Kind == "instruction_batch" && t.Conv != "" {
			batchStatus[t.Status]++
			if t.Status != "succeeded" && firstFailure == "" {
				firstFailure = t.Status + ": " + truncate(t.Summary, 300)
			}
			to := t.UpdatedAt
			if t.FinishedAt != nil {
				to = *t.FinishedAt
			}
			batches[t.Conv] = append(batches[t.Conv], span{t.CreatedAt, to})
		}
	}
	paused := pausedSpans(ops, end)
	ps.mu.Lock()
	injects := map[string][]injectSeen{}
	for k, v := range ps.injects {
		injects[k] = append([]injectSeen(nil), v...)
	}
	ps.mu.Unlock()
	var jobsDone, typedOnce, dupAnswered int
	for client := range ps.dedup {
		for _, id := range convIDs(client) {
			b, err := os.ReadFile(r.convLog(id))
			if err == nil {
				count := map[string]int{}
				for _, line := range strings.Fields(string(b)) {
					count[line]++
					ran++
				}
				for msg, c := range count {
					if c > 1 {
						broken = append(broken, fmt.Sprintf("instruction batch of message %s in %s ran %d times", msg, id, c))
					}
					if !sentIDs[msg] {
						broken = append(broken, fmt.Sprintf("a batch ran for message %s, which no plugin reported", msg))
					}
				}
			}
			jb, err := harness.Get(leader.url+"/v1/renewal/jobs?limit=500&local_conversation_id="+id, 5*time.Second)
			if err != nil {
				broken = append(broken, "renewal jobs of "+id+": "+err.Error())
				continue
			}
			var env struct {
				Data struct {
					Jobs []jobView `json:"jobs"`
				} `json:"data"`
			}
			_ = json.Unmarshal(jb, &env)
			for _, j := range env.Data.Jobs {
				var typed []injectSeen
				for key, seen := range injects {
					if strings.HasPrefix(key, "renewal:"+j.ID+".") {
						typed = append(typed, seen...)
					}
				}
				if j.Status == "done" {
					jobsDone++
					if j.Duplicate {
						dupAnswered++
					}
				}
				if len(typed) == 1 {
					typedOnce++
				}
				if ps.dedup[client] != nil && len(typed) > 1 {
					broken = append(broken, fmt.Sprintf("renewal job %s typed %d times to the dedup plugin", j.ID, len(typed)))
				}
				if ps.dedup[client] == nil && j.Status == "done" && len(typed) == 0 {
					broken = append(broken, fmt.Sprintf("renewal job %s is done but the plugin never typed it", j.ID))
				}
				if j.StartedAt == nil {
					continue
				}
				for _, s := range paused[id] {
					if s.holds(*j.StartedAt) {
						broken = append(broken, fmt.Sprintf("renewal job %s started at %s while %s was paused (%s → %s)", j.ID,
							j.StartedAt.Format("15:04:05.000"), id, s.from.Format("15:04:05.000"), s.to.Format("15:04:05.000")))
					}
				}
				for _, s := range batches[id] {
					if s.holds(*j.StartedAt) {
						broken = append(broken, fmt.Sprintf("renewal job %s started at %s while an instruction batch of %s ran (%s → %s)", j.ID,
							j.StartedAt.Format("15:04:05.000"), id, s.from.Format("15:04:05.000"), s.to.Format("15:04:05.000")))
					}
				}
			}
		}
	}
	if batchStatus["succeeded"] > 0 && ran == 0 {
		// The at-most-once check would pass on nothing.
		broken = append(broken, fmt.Sprintf("%d instruction batch tasks succeeded but no batch run reached its log", batchStatus["succeeded"]))
	}
	// No batch succeeding at all (every block refused, e.g. by the
	// sandbox's write roots) would leave the at-most-once check above with
	// nothing to check: that is a broken run, not a passing one.
	total := 0
	for _, n := range batchStatus {
		total += n
	}
	if total >= 10 && batchStatus["succeeded"] == 0 {
		broken = append(broken, fmt.Sprintf("none of %d instruction batch tasks succeeded (first: %s): the at-most-once check checked nothing", total, firstFailure))
	}
	figures = append(figures, fmt.Sprintf("instruction batch tasks by status: %v; first not succeeded: %s", batchStatus, firstFailure))
	figures = append(figures, fmt.Sprintf("conversations: %d message ids reported, %d batch runs logged, %d instruction batch tasks; renewals: %d done (%d answered duplicate), %d typed exactly once",
		len(sentIDs), ran, len(tasks), jobsDone, dupAnswered, typedOnce))
	return broken, figures
}

// settledBatches waits up to bound for the leader to list no running task
// and no instruction_running conversation, and says what is left.
func settledBatches(leader *node, bound time.Duration) []string {
	var running []string
	deadline := time.Now().Add(bound)
	for {
		running = running[:0]
		var tasks struct {
			Data struct {
				Tasks []taskView `json:"tasks"`
			} `json:"data"`
		}
		b, err := harness.Get(leader.url+"/v1/tasks?status=running&limit=500", 5*time.Second)
		if err == nil {
			_ = json.Unmarshal(b, &tasks)
			for _, t := range tasks.Data.Tasks {
				running = append(running, fmt.Sprintf("task %s (%s) still running", t.ID, t.Title))
			}
		}
		var convs struct {
			Data struct {
				Conversations []struct {
					ID    string `json:"local_conversation_id"`
					State string `json:"execution_state"`
				} `json:"conversations"`
			} `json:"data"`
		}
		c, cerr := harness.Get(leader.url+"/v1/renewal/conversations?limit=1000", 5*time.Second)
		if cerr == nil {
			_ = json.Unmarshal(c, &convs)
			for _, cv := range convs.Data.Conversations {
				if cv.State == "instruction_running" {
					running = append(running, fmt.Sprintf("conversation %s still instruction_running", cv.ID))
				}
			}
		}
		if err == nil && cerr == nil && len(running) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil || cerr != nil {
				running = append(running, fmt.Sprintf("could not read tasks or conversations: %v %v", err, cerr))
			}
			out := make([]string, len(running))
			for i, r := range running {
				out[i] = fmt.Sprintf("%s %s after the load stopped", r, bound)
			}
			return out
		}
		time.Sleep(500 * time.Millisecond)
	}
}
