package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// loader runs one kind of client in a loop until ctx ends, each with its
// own seeded random source (so a seed replays the same choices).
type loader func(ctx context.Context, r *rig, n *node, rnd *rand.Rand)

// startLoad starts every loader on every node and returns a wait function.
func (r *rig) startLoad(ctx context.Context, seed int64, loaders map[string]loader, perNode map[string]int) func() {
	var wg sync.WaitGroup
	i := int64(0)
	names := make([]string, 0, len(loaders))
	for name := range loaders {
		names = append(names, name)
	}
	sortStrings(names)
	for _, name := range names {
		for _, n := range r.nodes {
			for k := 0; k < max(1, perNode[name]); k++ {
				i++
				wg.Add(1)
				go func(l loader, n *node, rnd *rand.Rand) {
					defer wg.Done()
					l(ctx, r, n, rnd)
				}(loaders[name], n, rand.New(rand.NewSource(seed*1000+i)))
			}
		}
	}
	return wg.Wait
}

func pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// modeWriter sets the system mode through its node (a standby forwards) with
// a unique reason, so the answer tells which version this write produced.
func modeWriter(ctx context.Context, r *rig, n *node, rnd *rand.Rand) {
	modes := []string{"running", "paused", "draining"}
	for pause(ctx, time.Duration(20+rnd.Intn(100))*time.Millisecond) {
		op := &Op{ID: r.hist.NewID("w"), Kind: "mode_write", Node: n.name, Start: time.Now()}
		mode := modes[rnd.Intn(len(modes))]
		a := r.call(context.Background(), n, "POST", "/v1/system/mode", map[string]string{"mode": mode, "reason": op.ID, "requested_by": "chaos"}, 5*time.Second)
		if a.err == nil && a.status == 200 {
			var env struct {
				Data struct {
					Mode    string `json:"mode"`
					Reason  string `json:"reason"`
					Version uint64 `json:"version"`
				} `json:"data"`
			}
			if json.Unmarshal(a.body, &env) == nil {
				op.Detail = map[string]any{"mode": mode, "version": env.Data.Version, "own": env.Data.Reason == op.ID, "served_by": a.header.Get("X-Svcd-Served-By")}
			}
		}
		r.record(op, a)
	}
}

// execer runs short commands whose output it checks, output floods, and
// commands that outlive their timeout.
func execer(ctx context.Context, r *rig, n *node, rnd *rand.Rand) {
	for pause(ctx, time.Duration(20+rnd.Intn(200))*time.Millisecond) {
		op := &Op{ID: r.hist.NewID("x"), Kind: "exec", Node: n.name, Start: time.Now()}
		var body map[string]any
		var want string
		switch k := rnd.Intn(10); {
		case k < 6:
			body = map[string]any{"command": "echo " + op.ID, "cwd": n.dir}
			want = "echo"
		case k < 8:
			size := 1 << (16 + rnd.Intn(6)) // 64 KiB … 2 MiB
			body = map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", size), "cwd": n.dir}
			want = "flood"
		default:
			body = map[string]any{"command": "sleep 30", "cwd": n.dir, "timeoutMs": 200 + rnd.Intn(600)}
			want = "timeout"
		}
		a := r.call(context.Background(), n, "POST", "/v1/exec", body, 20*time.Second)
		op.Detail = map[string]any{"want": want}
		if a.err == nil && a.status == 200 {
			var env struct {
				Data struct {
					OK     bool `json:"ok"`
					Result struct {
						Stdout   string `json:"stdout"`
						TimedOut bool   `json:"timedOut"`
						ExitCode *int   `json:"exitCode"`
					} `json:"result"`
				} `json:"data"`
			}
			if err := json.Unmarshal(a.body, &env); err != nil {
				op.Detail["wrong"] = "not JSON: " + err.Error()
			} else {
				res := env.Data.Result
				switch want {
				case "echo":
					if !env.Data.OK || res.Stdout != op.ID+"\n" {
						op.Detail["wrong"] = fmt.Sprintf("ok=%v stdout %q, want %q", env.Data.OK, truncate(res.Stdout, 80), op.ID+"\n")
					}
				case "timeout":
					if env.Data.OK || !res.TimedOut {
						op.Detail["wrong"] = fmt.Sprintf("sleep past its timeout: ok=%v timedOut=%v", env.Data.OK, res.TimedOut)
					}
				case "flood":
					if strings.Trim(res.Stdout, "a") != "" {
						op.Detail["wrong"] = "flood output holds other bytes than the command wrote"
					}
				}
			}
		}
		r.record(op, a)
	}
}

// fileWriter writes a new file per operation; the checker reads back every
// acknowledged one.
func fileWriter(ctx context.Context, r *rig, n *node, rnd *rand.Rand) {
	for pause(ctx, time.Duration(20+rnd.Intn(150))*time.Millisecond) {
		op := &Op{ID: r.hist.NewID("f"), Kind: "file_write", Node: n.name, Start: time.Now()}
		content := strings.Repeat(op.ID+"\n", 1+rnd.Intn(2000))
		path := filepath.Join("files", op.ID+".txt")
		a := r.call(context.Background(), n, "POST", "/v1/files/write", map[string]any{"path": path, "cwd": n.dir, "content": content, "createParents": true}, 10*time.Second)
		op.Detail = map[string]any{"path": filepath.Join(n.dir, path), "len": len(content)}
		if a.err == nil && a.status == 200 {
			var env struct {
				Data struct {
					OK bool `json:"ok"`
				} `json:"data"`
			}
			if json.Unmarshal(a.body, &env) != nil || !env.Data.OK {
				op.Detail["wrong"] = "write answered 200 without data.ok: " + truncate(string(a.body), 200)
			}
		}
		r.record(op, a)
	}
}

// checkFiles: every acknowledged write is on disk with its content.
func checkFiles(ops []*Op) []string {
	var broken []string
	for _, op := range ops {
		if op.Kind != "file_write" || op.Outcome != "ok" {
			continue
		}
		b, err := os.ReadFile(op.Detail["path"].(string))
		if err != nil || len(b) != op.Detail["len"].(int) || !strings.HasPrefix(string(b), op.ID+"\n") {
			broken = append(broken, fmt.Sprintf("acknowledged file write %s lost or wrong: %v (len %d, want %v)", op.ID, err, len(b), op.Detail["len"]))
		}
	}
	return broken
}
