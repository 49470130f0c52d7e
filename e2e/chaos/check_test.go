package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// documentedCodes is every `snake_case` word in backticks in the repo's docs
// and README: an error code a client sees must be one of them.
func documentedCodes() map[string]bool {
	codes := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(harness.RepoRoot(), "docs", "*.md"))
	files = append(files, filepath.Join(harness.RepoRoot(), "README.md"))
	re := regexp.MustCompile("`([a-z][a-z0-9]*(?:_[a-z0-9]+)*)`")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			codes[m[1]] = true
		}
	}
	return codes
}

// explained says whether a fault that can cut a connection overlapped the
// operation on the node the client talked to: that node killed or stopped.
// A fault elsewhere never explains a cut: a standby whose leader dies
// answers 503 leader_unreachable (or ends a stream with that code), and a
// stopped leader only delays a forwarded call.
func explained(op *Op, faults []Fault) bool {
	const grace = 2 * time.Second
	for _, f := range faults {
		switch f.Kind {
		case "kill_leader", "kill_standby", "stop_leader", "stop_standby", "partition_leader", "partition_standby":
		default:
			continue
		}
		if f.Target != op.Node {
			continue
		}
		if !f.Start.After(op.End.Add(grace)) && !f.End.Add(grace).Before(op.Start) {
			return true
		}
	}
	return false
}

// checkErrors: every failure carries a documented code and no 500; every
// answer-less call is explained by a node fault; no answer was wrong.
func checkErrors(ops []*Op, faults []Fault, codes map[string]bool) (broken []string) {
	for _, op := range ops {
		if w, ok := op.Detail["wrong"]; ok {
			broken = append(broken, fmt.Sprintf("%s %s on %s: wrong answer: %v", op.Kind, op.ID, op.Node, w))
		}
		switch op.Outcome {
		case "failed":
			switch {
			case op.Status == 500: // a documented 502, 503 or 504 is an answer; a 500 is a bug
				broken = append(broken, fmt.Sprintf("%s %s on %s: status %d (%s)", op.Kind, op.ID, op.Node, op.Status, op.Code))
			case op.Code == "":
				broken = append(broken, fmt.Sprintf("%s %s on %s: status %d without a JSON error code: %v", op.Kind, op.ID, op.Node, op.Status, op.Detail["body"]))
			case !codes[op.Code]:
				broken = append(broken, fmt.Sprintf("%s %s on %s: error code %q is not documented", op.Kind, op.ID, op.Node, op.Code))
			}
		case "ambiguous":
			if !explained(op, faults) {
				broken = append(broken, fmt.Sprintf("%s %s on %s: %s with no node fault to explain it (%s → %s)", op.Kind, op.ID, op.Node, op.Err,
					op.Start.Format("15:04:05.000"), op.End.Format("15:04:05.000")))
			}
		}
	}
	return broken
}

type systemState struct {
	Mode    string `json:"mode"`
	Reason  string `json:"reason"`
	Version uint64 `json:"version"`
}

func stateOf(n *node) (systemState, error) {
	b, err := harness.Get(n.url+"/v1/system/state", 2*time.Second)
	if err != nil {
		return systemState{}, err
	}
	var env struct {
		Data systemState `json:"data"`
	}
	err = json.Unmarshal(b, &env)
	return env.Data, err
}

// checkWrites: both nodes end on the same state; the final version counts
// every acknowledged write and at most the ambiguous ones besides; no
// version was acknowledged to two writes; the last acknowledged own write
// is not above the final version.
func checkWrites(r *rig, ops []*Op) (broken, figures []string) {
	var states []systemState
	deadline := time.Now().Add(30 * time.Second)
	for {
		states = states[:0]
		var err error
		for _, n := range r.nodes {
			var s systemState
			if s, err = stateOf(n); err != nil {
				break
			}
			states = append(states, s)
		}
		if err == nil && states[0] == states[1] {
			break
		}
		if time.Now().After(deadline) {
			return []string{fmt.Sprintf("the nodes' system states do not agree 30 s after the load stopped: %+v (err %v)", states, err)}, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	final := states[0].Version
	var acked, ambiguous, failed uint64
	owner := map[uint64]string{}
	for _, op := range ops {
		if op.Kind != "mode_write" {
			continue
		}
		switch op.Outcome {
		case "ok":
			acked++
			if own, _ := op.Detail["own"].(bool); own {
				v := op.Detail["version"].(uint64)
				if prev, dup := owner[v]; dup {
					broken = append(broken, fmt.Sprintf("version %d acknowledged to both %s and %s", v, prev, op.ID))
				}
				owner[v] = op.ID
				if v > final {
					broken = append(broken, fmt.Sprintf("write %s was acknowledged at version %d, above the final %d", op.ID, v, final))
				}
			}
		case "ambiguous":
			ambiguous++
		default:
			failed++ // refused with a code: 503s of a forward may still have committed
		}
	}
	if final < acked {
		broken = append(broken, fmt.Sprintf("acknowledged writes lost: %d acknowledged, final version %d", acked, final))
	}
	if final > acked+ambiguous+failed {
		broken = append(broken, fmt.Sprintf("final version %d is above every write sent (%d acknowledged, %d ambiguous, %d refused)", final, acked, ambiguous, failed))
	}
	figures = append(figures, fmt.Sprintf("mode writes: %d acknowledged (%d with their own version), %d ambiguous, %d refused; final version %d on both nodes",
		acked, len(owner), ambiguous, failed, final))
	return broken, figures
}

func sortStrings(s []string) { sort.Strings(s) }
