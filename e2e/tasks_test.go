package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

type taskRecord struct {
	ID     string `json:"task_id"`
	RunID  string `json:"run_id"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	Logs   []struct {
		Line string `json:"line"`
	} `json:"logs"`
}

func getConv(t *testing.T, d *harness.Daemon, id string) convRecord {
	t.Helper()
	var env struct{ Data convRecord }
	r := d.Do("GET", "/v1/renewal/conversations/"+id, nil)
	if r.Status != 200 {
		t.Fatalf("conversation %s: %d %s", id, r.Status, r.Body)
	}
	r.Decode(t, &env)
	return env.Data
}

// TestTasksControllersAndRecoveryAfterSIGKILL: instruction batches are
// durable tasks with logs; the supervisor registers itself as a controller;
// a SIGKILL in the middle of a batch leaves neither a conversation stuck in
// instruction_running nor a task stuck running after restart.
func TestTasksControllersAndRecoveryAfterSIGKILL(t *testing.T) {
	d := instrDaemon(t)
	res := ingest(t, d, "conv-tasks", "m-tasks-1", block("@svc::exec::echo task-log-line"), true)
	if res.Ingest.TaskID == "" || res.Ingest.Status != "executed" {
		t.Fatalf("ingest %+v", res.Ingest)
	}
	var list struct {
		Data struct{ Tasks []taskRecord }
	}
	d.Do("GET", "/v1/tasks?limit=5", nil).Decode(t, &list)
	if len(list.Data.Tasks) == 0 || list.Data.Tasks[0].ID != res.Ingest.TaskID || list.Data.Tasks[0].Kind != "instruction_batch" || list.Data.Tasks[0].Status != "succeeded" {
		t.Fatalf("tasks %+v", list.Data.Tasks)
	}
	var logs struct {
		Data struct {
			Logs []struct{ Line string }
		}
	}
	d.Do("GET", "/v1/tasks/"+res.Ingest.TaskID+"/logs", nil).Decode(t, &logs)
	if len(logs.Data.Logs) == 0 {
		t.Fatalf("no log lines for %s", res.Ingest.TaskID)
	}
	for _, bad := range []struct {
		path   string
		status int
		code   string
	}{{"/v1/tasks/nope", 404, "task_not_found"}, {"/v1/tasks?limit=0", 422, "invalid_limit"}, {"/v1/tasks?limit=x", 422, "invalid_limit"}} {
		if r := d.Do("GET", bad.path, nil); r.Status != bad.status || !strings.Contains(string(r.Body), bad.code) {
			t.Fatalf("%s: %d %s", bad.path, r.Status, r.Body)
		}
	}
	var ctl struct {
		Data struct {
			Controllers []struct {
				NodeID        string `json:"node_id"`
				APIAddr       string `json:"api_addr"`
				Role          string `json:"role"`
				LastHeartbeat string `json:"last_heartbeat"`
			}
			Leader struct {
				NodeID string `json:"node_id"`
			}
		}
	}
	d.Do("GET", "/v1/controllers", nil).Decode(t, &ctl)
	if len(ctl.Data.Controllers) != 1 || ctl.Data.Controllers[0].Role != "leader" || ctl.Data.Controllers[0].LastHeartbeat == "" || ctl.Data.Leader.NodeID != ctl.Data.Controllers[0].NodeID {
		t.Fatalf("controllers %+v", ctl.Data)
	}

	// A batch that outlives the process.
	// (A plain client: the daemon dies under this request on purpose.)
	body, _ := json.Marshal(map[string]string{"platform": "platform_a", "local_conversation_id": "conv-kill", "remote_conversation_id": "r-kill", "message_id": "m-kill", "text": block("@svc::exec::sleep 20")})
	req, _ := http.NewRequest("POST", "http://"+d.Addr+"/v1/instructions/ingest", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.Token)
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var env struct{ Data convRecord }
		if r := d.Do("GET", "/v1/renewal/conversations/conv-kill", nil); r.Status == 200 {
			r.Decode(t, &env)
			if env.Data.ExecutionState == "instruction_running" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.Kill()
	d.Restart()
	if c := getConv(t, d, "conv-kill"); c.ExecutionState != "idle" {
		t.Fatalf("execution_state after SIGKILL and restart: %+v", c)
	}
	d.Do("GET", "/v1/tasks", nil).Decode(t, &list)
	var kept, interrupted bool
	for _, tk := range list.Data.Tasks {
		if tk.Status == "running" {
			t.Fatalf("task %s still running after restart", tk.ID)
		}
		kept = kept || (tk.ID == res.Ingest.TaskID && tk.Status == "succeeded")
		interrupted = interrupted || tk.Status == "interrupted"
	}
	if !kept || !interrupted {
		t.Fatalf("tasks after restart %+v", list.Data.Tasks)
	}
	// The record is still one record, the repeat window survived.
	if r := ingest(t, d, "conv-tasks", "m-tasks-1", block("@svc::exec::echo again"), true); r.Ingest.Status != "repeated" {
		t.Fatalf("repeat after restart: %+v", r.Ingest)
	}
}
