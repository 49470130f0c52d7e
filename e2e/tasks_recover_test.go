package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// An instruction batch whose node dies mid-run does not stay `running` for
// good (chaos finding 9): the restarted node, taking the lead, ends it
// failed with error_code node_lost and a log line saying its blocks are not
// run again, and the same reply reported again stays repeated.
func TestInstructionBatchInterruptedByNodeKillEndsNodeLost(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	text := block("@svc::exec::sleep 60")
	body, _ := json.Marshal(map[string]string{"platform": "platform_a", "local_conversation_id": "conv-lost",
		"remote_conversation_id": "r-conv-lost", "message_id": "m-lost", "text": text})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Ends with the daemon's death: the batch runs inside this request.
		req, _ := http.NewRequestWithContext(ctx, "POST", d.URL+"/v1/instructions/ingest", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+d.Token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()

	type task struct {
		ID        string `json:"task_id"`
		Status    string `json:"status"`
		ErrorCode string `json:"error_code"`
		Title     string `json:"title"`
	}
	list := func() []task {
		var env struct {
			Data struct {
				Tasks []task `json:"tasks"`
			} `json:"data"`
		}
		d.Do("GET", "/v1/tasks", nil).Decode(t, &env)
		return env.Data.Tasks
	}
	var running task
	waitUntil(t, 15*time.Second, "the batch's task to run", func() bool {
		for _, tk := range list() {
			if tk.Status == "running" && strings.Contains(tk.Title, "conv-lost") {
				running = tk
				return true
			}
		}
		return false
	})

	d.Kill()
	d.Restart()
	var env struct {
		Data task `json:"data"`
	}
	var got task
	waitUntil(t, 15*time.Second, "the lost batch's task to end", func() bool {
		r := d.Do("GET", "/v1/tasks/"+running.ID, nil)
		if r.Status != 200 {
			return false
		}
		r.Decode(t, &env)
		got = env.Data
		return got.Status != "running"
	})
	if got.Status != "failed" || got.ErrorCode != "node_lost" {
		t.Fatalf("lost batch task after the restart: %+v", got)
	}
	logs := string(d.Do("GET", "/v1/tasks/"+running.ID+"/logs", nil).Body)
	if !strings.Contains(logs, "node_lost") || !strings.Contains(logs, "not run again") {
		t.Fatalf("the task's log does not say it was interrupted:\n%s", logs)
	}
	if res := ingest(t, d, "conv-lost", "m-lost", text, true); res.Ingest.Status != "repeated" {
		t.Fatalf("the interrupted reply reported again: %+v", res.Ingest)
	}
}
