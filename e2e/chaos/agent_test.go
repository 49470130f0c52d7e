package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/workers/agentd/codextest"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

// agentReply is what the fake model answers every turn of the run.
const agentReply = "chaos turn ok"

// agent is n1's agentd (spawned by svcd) driving the real Codex app-server
// against the fake model server. Agent routes are local to a node, so the
// agent load and its faults go to n1 alone.
type agent struct {
	fm   *fakemodel.Server
	home string // CODEX_HOME: every Codex process of the run has it
	env  []string
}

func newAgent(t *testing.T, lab *harness.NetLab) *agent {
	bin := codextest.Bin(t)
	fm := fakemodel.New()
	fm.Default = fakemodel.Reply{Text: agentReply}
	addr := "127.0.0.1:0"
	if lab != nil {
		// n1 (and so its Codex) runs in the lab: the fake model listens on
		// the test's end of n1's client link.
		addr = lab.RootIP(1) + ":0"
	}
	if err := fm.Start(addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fm.Close() })
	home := codextest.Home(t, fm.BaseURL())
	return &agent{fm: fm, home: home, env: []string{
		"SVC_AGENTD_SPAWN=true", "SVC_AGENTD_LISTEN=" + harness.FreePort(t), "SVC_AGENTD_COMMAND=" + bin + " app-server",
		"SVC_AGENTD_CODEX_HOME=" + home,
		// n1 (agentd, Codex) gets a HOME of its own: Codex's shell sources
		// ~/.bashrc, and a machine's dotfiles (pyenv's background rehash)
		// would leave processes the run does not own (docs/reliability.md,
		// finding 10, which this hides but does not fix).
		"HOME=" + t.TempDir(),
	}}
}

// agentTurner keeps one session on n1 and sends it turns one after another;
// a session lost with agentd is created again.
func agentTurner(ctx context.Context, r *rig, n *node, rnd *rand.Rand) {
	if n.name != "n1" {
		return
	}
	session := ""
	for pause(ctx, time.Duration(300+rnd.Intn(1500))*time.Millisecond) {
		if session == "" {
			op := &Op{ID: r.hist.NewID("as"), Kind: "agent_session", Node: n.name, Start: time.Now()}
			a := r.call(context.Background(), n, "POST", "/v1/agent/sessions", map[string]any{"cwd": n.dir, "purpose": "chaos"}, 30*time.Second)
			if a.err == nil && a.status == 200 {
				var env struct {
					Data struct {
						Session struct {
							SessionID string `json:"sessionId"`
						} `json:"session"`
					} `json:"data"`
				}
				if json.Unmarshal(a.body, &env) == nil {
					session = env.Data.Session.SessionID
				}
			}
			r.record(op, a)
			continue
		}
		op := &Op{ID: r.hist.NewID("at"), Kind: "agent_turn", Node: n.name, Start: time.Now(), Detail: map[string]any{"session": session}}
		a := r.call(context.Background(), n, "POST", "/v1/agent/turn", map[string]any{"sessionId": session, "input": op.ID, "waitMs": 20000}, 40*time.Second)
		if a.err == nil && a.status == 200 {
			var env struct {
				Data struct {
					Session map[string]any `json:"session"`
				} `json:"data"`
			}
			if json.Unmarshal(a.body, &env) == nil {
				out, _ := env.Data.Session["lastTurnOutput"].(string)
				op.Detail["output"], op.Detail["state"] = out, env.Data.Session["state"]
				if out != "" && out != agentReply {
					op.Detail["wrong"] = fmt.Sprintf("turn output %q, the model only ever says %q", truncate(out, 80), agentReply)
				}
			}
		}
		if a.status == 404 {
			session = "" // agentd lost it: start a new one
		}
		r.record(op, a)
	}
}

// agentPids is n1's agentd worker and Codex child (0 when not running).
func agentPids(n *node) (agentd, codex int) {
	if ws, err := workersOf(n); err == nil {
		for _, w := range ws {
			if w.Name == "agentd" && w.State == "running" {
				agentd = w.Pid
			}
		}
	}
	b, err := harness.Get(n.url+"/v1/agent", 2*time.Second)
	if err != nil {
		return agentd, 0
	}
	var env struct {
		Data struct {
			Agentd struct {
				Child struct {
					Pid   int    `json:"pid"`
					State string `json:"state"`
				} `json:"child"`
			} `json:"agentd"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &env) == nil && env.Data.Agentd.Child.State == "running" {
		codex = env.Data.Agentd.Child.Pid
	}
	return agentd, codex
}

// signalAgent SIGKILLs n1's agentd or its Codex child, or freezes the
// Codex child for a while.
func (r *rig) signalAgent(rnd *rand.Rand, which string) (string, string, error) {
	agentd, codex := agentPids(r.nodes[0])
	switch which {
	case "agentd":
		if agentd == 0 {
			return "", "", fmt.Errorf("agentd is not running")
		}
		return "n1/agentd", "", syscall.Kill(agentd, syscall.SIGKILL)
	case "codex":
		if codex == 0 {
			return "", "", fmt.Errorf("no Codex child is running")
		}
		return "n1/codex", "", syscall.Kill(codex, syscall.SIGKILL)
	default: // stop_codex
		if codex == 0 {
			return "", "", fmt.Errorf("no Codex child is running")
		}
		d := time.Duration(500+rnd.Intn(3000)) * time.Millisecond
		if err := syscall.Kill(codex, syscall.SIGSTOP); err != nil {
			return "", "", err
		}
		time.Sleep(d)
		return "n1/codex", d.String(), syscall.Kill(codex, syscall.SIGCONT)
	}
}
