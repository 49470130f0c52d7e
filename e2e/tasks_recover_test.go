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

// recoverTask is the part of a task these tests read.
type recoverTask struct {
	ID        string `json:"task_id"`
	Status    string `json:"status"`
	ErrorCode string `json:"error_code"`
	Title     string `json:"title"`
}

// startLostBatch reports an AI reply whose batch runs `sleep 60` on d and
// waits until its task is running there. The request itself ends with d's
// death (the batch runs inside it).
func startLostBatch(t *testing.T, d *harness.Daemon, conv, msgID, text string) recoverTask {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"platform": "platform_a", "local_conversation_id": conv,
		"remote_conversation_id": "r-" + conv, "message_id": msgID, "text": text})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", d.URL+"/v1/instructions/ingest", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+d.Token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	var running recoverTask
	waitUntil(t, 15*time.Second, "the batch's task to run", func() bool {
		var env struct {
			Data struct {
				Tasks []recoverTask `json:"tasks"`
			} `json:"data"`
		}
		d.Do("GET", "/v1/tasks", nil).Decode(t, &env)
		for _, tk := range env.Data.Tasks {
			if tk.Status == "running" && strings.Contains(tk.Title, conv) {
				running = tk
				return true
			}
		}
		return false
	})
	return running
}

// expectLostBatchEnded waits until d, now leading, shows the task ended
// failed/node_lost with a log saying why, and checks the same reply reported
// again to d stays repeated (its blocks never run twice).
func expectLostBatchEnded(t *testing.T, d *harness.Daemon, running recoverTask, conv, msgID, text string) {
	t.Helper()
	var got recoverTask
	waitUntil(t, 15*time.Second, "the lost batch's task to end", func() bool {
		r := d.Do("GET", "/v1/tasks/"+running.ID, nil)
		if r.Status != 200 {
			return false
		}
		var env struct {
			Data recoverTask `json:"data"`
		}
		r.Decode(t, &env)
		got = env.Data
		return got.Status != "running"
	})
	if got.Status != "failed" || got.ErrorCode != "node_lost" {
		t.Fatalf("lost batch task: %+v", got)
	}
	logs := string(d.Do("GET", "/v1/tasks/"+running.ID+"/logs", nil).Body)
	if !strings.Contains(logs, "node_lost") || !strings.Contains(logs, "not run again") {
		t.Fatalf("the task's log does not say it was interrupted:\n%s", logs)
	}
	if res := ingest(t, d, conv, msgID, text, true); res.Ingest.Status != "repeated" {
		t.Fatalf("the interrupted reply reported again: %+v", res.Ingest)
	}
}

// An instruction batch whose node dies mid-run does not stay `running` for
// good (chaos finding 9): the restarted node, taking the lead, ends it
// failed with error_code node_lost and a log line saying its blocks are not
// run again, and the same reply reported again stays repeated.
func TestInstructionBatchInterruptedByNodeKillEndsNodeLost(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	text := block("@svc::exec::sleep 60")
	running := startLostBatch(t, d, "conv-lost", "m-lost", text)
	d.Kill()
	d.Restart()
	expectLostBatchEnded(t, d, running, "conv-lost", "m-lost", text)
}

// The same when the standby takes over: the batch ran on the leader, the
// leader is SIGKILLed and stays down, and the standby, leading now, ends the
// lost leader's task in its own leadership start-up. The reply reported again
// to the new leader stays repeated: the message id was replicated with the
// batch's start, so its blocks do not run a second time on another node.
func TestStandbyTakingOverEndsTheLostLeadersBatch(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	text := block("@svc::exec::sleep 60")
	running := startLostBatch(t, c.n1, "conv-ha-lost", "m-ha-lost", text)
	waitUntil(t, 10*time.Second, "the standby to see the running task", func() bool {
		r := c.n2.Do("GET", "/v1/tasks/"+running.ID, nil)
		return r.Status == 200 && strings.Contains(string(r.Body), `"running"`)
	})
	c.n1.Kill()
	waitUntil(t, 10*time.Second, "n2 to lead", func() bool { r, _ := role(t, c.n2); return r == "leader" })
	expectLostBatchEnded(t, c.n2, running, "conv-ha-lost", "m-ha-lost", text)
}
