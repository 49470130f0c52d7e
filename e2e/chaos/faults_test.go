package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"syscall"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// faultKind is one fault the schedule can pick: inject runs it to its end
// (a killed process is restarted, a stopped one continued) and returns the
// target and a note, or an error when it could not run this time.
type faultKind struct {
	name   string
	weight int
	inject func(r *rig, rnd *rand.Rand) (target, note string, err error)
}

func faultKinds(r *rig, ps *plugins) []faultKind {
	kinds := []faultKind{
		{"plugin_disconnect", 3, func(r *rig, rnd *rand.Rand) (string, string, error) { return ps.disconnect(rnd) }},
		{"slow_plugin", 1, func(r *rig, rnd *rand.Rand) (string, string, error) { return ps.stalled(rnd) }},
		{"kill_leader", 3, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.killNode(rnd, "leader") }},
		{"kill_standby", 3, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.killNode(rnd, "standby") }},
		{"stop_leader", 2, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.stopNode(rnd, "leader") }},
		{"stop_standby", 2, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.stopNode(rnd, "standby") }},
		{"kill_worker", 4, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.signalWorker(rnd, false) }},
		{"stop_worker", 2, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.signalWorker(rnd, true) }},
		{"kill_agentd", 2, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.signalAgent(rnd, "agentd") }},
		{"kill_codex", 2, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.signalAgent(rnd, "codex") }},
		{"stop_codex", 1, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.signalAgent(rnd, "stop") }},
		{"kill_witness", 1, func(r *rig, rnd *rand.Rand) (string, string, error) {
			r.c.KillWitness()
			time.Sleep(time.Duration(200+rnd.Intn(2000)) * time.Millisecond)
			r.c.StartWitness(r.t)
			return "w", "", nil
		}},
	}
	if r.c.Lab != nil {
		kinds = append(kinds,
			faultKind{"partition_leader", 2, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.partition(rnd, "leader") }},
			faultKind{"partition_standby", 2, func(r *rig, rnd *rand.Rand) (string, string, error) { return r.partition(rnd, "standby") }},
		)
	}
	return kinds
}

// partition takes the node with role off the lab's bridge for 0.5–6.5 s
// (its raft and forwards to and from the other node and the witness cut;
// its client link, which the load and plugins use, kept), then heals it.
// Cut off, a leader steps down within its lease and the other side elects.
func (r *rig) partition(rnd *rand.Rand, role string) (string, string, error) {
	n, err := r.byRole(role)
	if err != nil {
		return "", "", err
	}
	i := 1
	if n.name == "n2" {
		i = 2
	}
	d := time.Duration(500+rnd.Intn(6000)) * time.Millisecond
	r.c.Lab.Cut(r.t, i)
	time.Sleep(d)
	r.c.Lab.Heal(r.t, i)
	return n.name, d.String(), nil
}

// pick draws a fault kind by weight.
func pick(kinds []faultKind, rnd *rand.Rand) faultKind {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	x := rnd.Intn(total)
	for _, k := range kinds {
		if x < k.weight {
			return k
		}
		x -= k.weight
	}
	return kinds[0]
}

// byRole finds the node that has role now.
func (r *rig) byRole(role string) (*node, error) {
	for _, n := range r.nodes {
		if got, _, err := harness.Role(n.d); err == nil && got == role {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node is %s", role)
}

// killNode SIGKILLs the node with role, keeps it down a while, and starts
// it again on its data dir and address.
func (r *rig) killNode(rnd *rand.Rand, role string) (string, string, error) {
	n, err := r.byRole(role)
	if err != nil {
		return "", "", err
	}
	n.d.Kill()
	time.Sleep(time.Duration(100+rnd.Intn(2500)) * time.Millisecond)
	n.d.Restart()
	return n.name, "", nil
}

// stopNode freezes the node with role (SIGSTOP) for a while and continues it.
func (r *rig) stopNode(rnd *rand.Rand, role string) (string, string, error) {
	n, err := r.byRole(role)
	if err != nil {
		return "", "", err
	}
	d := time.Duration(200+rnd.Intn(3000)) * time.Millisecond
	_ = syscall.Kill(n.d.Pid(), syscall.SIGSTOP)
	time.Sleep(d)
	_ = syscall.Kill(n.d.Pid(), syscall.SIGCONT)
	return n.name, d.String(), nil
}

type workerInfo struct {
	Name  string `json:"name"`
	Pid   int    `json:"pid"`
	State string `json:"state"`
}

func workersOf(n *node) ([]workerInfo, error) {
	b, err := harness.Get(n.url+"/v1/workers", 2*time.Second)
	if err != nil {
		return nil, err
	}
	var env struct {
		Data struct {
			Workers []workerInfo `json:"workers"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, err
	}
	return env.Data.Workers, nil
}

// signalWorker SIGKILLs (or SIGSTOPs for a while, then SIGCONTs) one running
// worker of a random node.
func (r *rig) signalWorker(rnd *rand.Rand, stop bool) (string, string, error) {
	n := r.nodes[rnd.Intn(len(r.nodes))]
	ws, err := workersOf(n)
	if err != nil {
		return "", "", err
	}
	var running []workerInfo
	for _, w := range ws {
		if w.State == "running" && w.Pid > 0 {
			running = append(running, w)
		}
	}
	if len(running) == 0 {
		return "", "", fmt.Errorf("%s has no running worker", n.name)
	}
	w := running[rnd.Intn(len(running))]
	target := n.name + "/" + w.Name
	if !stop {
		return target, "", syscall.Kill(w.Pid, syscall.SIGKILL)
	}
	d := time.Duration(200+rnd.Intn(2000)) * time.Millisecond
	if err := syscall.Kill(w.Pid, syscall.SIGSTOP); err != nil {
		return "", "", err
	}
	time.Sleep(d)
	return target, d.String(), syscall.Kill(w.Pid, syscall.SIGCONT)
}
