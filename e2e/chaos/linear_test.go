package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability (issue 33): every read and write of a register the load
// touches is in the history with its invoke and return time; porcupine
// checks that some order of them, each placed between its invoke and its
// return, is what a single register would have answered. Two kinds of
// register: the system mode (its value is the write's unique reason) and
// each renewal conversation's automation status.

// linearCheckTimeout bounds porcupine on one register: an Unknown result is
// reported, not counted as broken.
const linearCheckTimeout = 60 * time.Second

// stateReader reads the system state through its node (a consistent read:
// the default).
func stateReader(ctx context.Context, r *rig, n *node, rnd *rand.Rand) {
	for pause(ctx, time.Duration(10+rnd.Intn(60))*time.Millisecond) {
		op := &Op{ID: r.hist.NewID("r"), Kind: "mode_read", Node: n.name, Start: time.Now()}
		a := r.call(context.Background(), n, "GET", "/v1/system/state", nil, 5*time.Second)
		if a.err == nil && a.status == 200 {
			var env struct {
				Data struct {
					Reason  string `json:"reason"`
					Version uint64 `json:"version"`
				} `json:"data"`
			}
			if err := json.Unmarshal(a.body, &env); err != nil {
				op.Detail = map[string]any{"wrong": "not JSON: " + err.Error()}
			} else {
				op.Detail = map[string]any{"reason": env.Data.Reason, "version": env.Data.Version}
			}
		}
		r.record(op, a)
	}
}

// convReader reads a random conversation of the conversation load.
func convReader(ctx context.Context, r *rig, n *node, rnd *rand.Rand) {
	ids := append(convIDs("chaos-dedup"), convIDs("chaos-plain")...)
	for pause(ctx, time.Duration(20+rnd.Intn(100))*time.Millisecond) {
		id := ids[rnd.Intn(len(ids))]
		op := &Op{ID: r.hist.NewID("cr"), Kind: "conv_read", Node: n.name, Start: time.Now(), Detail: map[string]any{"conversation": id}}
		a := r.call(context.Background(), n, "GET", "/v1/renewal/conversations/"+url.PathEscape(id), nil, 5*time.Second)
		if a.err == nil && a.status == 200 {
			var env struct {
				Data struct {
					Status string `json:"automation_status"`
				} `json:"data"`
			}
			if err := json.Unmarshal(a.body, &env); err != nil {
				op.Detail["wrong"] = "not JSON: " + err.Error()
			} else {
				op.Detail["status"] = env.Data.Status
			}
		}
		r.record(op, a)
	}
}

// regOp is a register operation: a write of value, or a read that saw it.
type regOp struct {
	write bool
	value string
	op    *Op
}

// unknown is the register's value before the history says what it is: a
// window cut out of a history starts with whatever the writes before it
// left, so the first read there may see any value.
const unknown = "\x00unknown"

var registerModel = porcupine.Model{
	Init: func() any { return unknown },
	Step: func(state, input, output any) (bool, any) {
		in := input.(regOp)
		if in.write {
			return true, in.value
		}
		if state == unknown {
			return true, in.value
		}
		return state == in.value, state
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(regOp)
		if in.write {
			return fmt.Sprintf("write(%q)", in.value)
		}
		return fmt.Sprintf("read() → %q", in.value)
	},
}

// registers turns the history into porcupine operations, per register. An
// acknowledged write ends when its answer came; a write with no answer, or
// refused in a way that does not say it did nothing (503: the forward may
// have reached the leader), is pending: it may take effect at any time
// after its invoke (return time infinity). A 4xx refusal changed nothing,
// and a read without a 200 answer observed nothing: both are left out.
func registers(ops []*Op) map[string][]porcupine.Operation {
	out := map[string][]porcupine.Operation{}
	add := func(reg string, op *Op, in regOp) {
		ret := op.End.UnixNano()
		if in.write && op.Outcome != "ok" {
			ret = math.MaxInt64
		}
		out[reg] = append(out[reg], porcupine.Operation{Input: in, Call: op.Start.UnixNano(), Output: nil, Return: ret})
	}
	for _, op := range ops {
		refusedForSure := op.Outcome == "failed" && op.Status >= 400 && op.Status < 500
		switch {
		case op.Kind == "mode_write" && !refusedForSure:
			add("system mode", op, regOp{write: true, value: op.ID, op: op})
		case op.Kind == "mode_read" && op.Outcome == "ok":
			if v, ok := op.Detail["reason"].(string); ok {
				add("system mode", op, regOp{value: v, op: op})
			}
		case strings.HasPrefix(op.Kind, "conv_") && op.Kind != "conv_read" && !refusedForSure:
			id, _ := op.Detail["conversation"].(string)
			add("conversation "+id, op, regOp{write: true, value: strings.TrimPrefix(op.Kind, "conv_"), op: op})
		case op.Kind == "conv_read" && op.Outcome == "ok":
			id, _ := op.Detail["conversation"].(string)
			if v, ok := op.Detail["status"].(string); ok {
				add("conversation "+id, op, regOp{value: v, op: op})
			}
		}
	}
	for reg, h := range out {
		h = boundPending(h)
		sort.Slice(h, func(i, j int) bool { return h[i].Call < h[j].Call })
		out[reg] = h
	}
	return out
}

// boundPending narrows pending writes without changing which orders are
// valid, so that the search stays small (thousands of writes, hundreds of
// them pending, timed out otherwise): a pending write whose value no read
// saw can always take effect last, after everything, so it is left out; a
// pending write of a value no other write wrote must take effect before
// the first read that saw it returned, which becomes its return time.
func boundPending(h []porcupine.Operation) []porcupine.Operation {
	writers := map[string]int{}
	firstSeen := map[string]int64{}
	for _, o := range h {
		in := o.Input.(regOp)
		if in.write {
			writers[in.value]++
		} else if t, ok := firstSeen[in.value]; !ok || o.Return < t {
			firstSeen[in.value] = o.Return
		}
	}
	out := h[:0:0]
	for _, o := range h {
		in := o.Input.(regOp)
		if in.write && o.Return == math.MaxInt64 {
			seen, ok := firstSeen[in.value]
			switch {
			case !ok:
				continue
			case writers[in.value] == 1 && seen >= o.Call:
				o.Return = seen
			}
		}
		out = append(out, o)
	}
	return out
}

// checkLinearizable: every register's history is linearizable; for one
// that is not, the smallest window of operations (by invoke order) that is
// not linearizable on its own is printed.
func checkLinearizable(ops []*Op) (broken, figures []string) {
	regs := registers(ops)
	names := make([]string, 0, len(regs))
	for name := range regs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		h := regs[name]
		start := time.Now()
		res := porcupine.CheckOperationsTimeout(registerModel, h, linearCheckTimeout)
		reads := 0
		for _, o := range h {
			if !o.Input.(regOp).write {
				reads++
			}
		}
		figures = append(figures, fmt.Sprintf("linearizability of %s: %s (%d writes, %d reads, checked in %v)", name, res, len(h)-reads, reads, time.Since(start).Round(time.Millisecond)))
		if res == porcupine.Illegal {
			broken = append(broken, fmt.Sprintf("the history of %s is not linearizable; the smallest bad window (the operations of the shortest illegal prefix in flight in its last second):\n%s", name, describeWindow(smallestBadWindow(h))))
		}
	}
	return broken, figures
}

// smallestBadWindow finds the earliest moment T by which the history is
// surely not linearizable: the shortest prefix (the writes invoked by T and
// the reads answered by T) that is illegal on its own, by binary search
// over T. Such a prefix is a sound cut: a read in it saw a write invoked
// before it returned, so in it too, and badness only grows with T. It
// returns the operations of that prefix that were in flight in the last
// second before T, where the violation shows.
func smallestBadWindow(h []porcupine.Operation) []porcupine.Operation {
	prefix := func(t int64) []porcupine.Operation {
		var out []porcupine.Operation
		for _, o := range h {
			if o.Call <= t && (o.Input.(regOp).write || o.Return <= t) {
				out = append(out, o)
			}
		}
		return out
	}
	var times []int64
	for _, o := range h {
		if o.Input.(regOp).write {
			times = append(times, o.Call)
		} else {
			times = append(times, o.Return)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	i := sort.Search(len(times), func(i int) bool {
		return porcupine.CheckOperationsTimeout(registerModel, prefix(times[i]), linearCheckTimeout) == porcupine.Illegal
	})
	if i == len(times) {
		return nil // only the whole history is illegal (or the checks timed out)
	}
	t := times[i]
	var w []porcupine.Operation
	for _, o := range prefix(t) {
		if o.Return >= t-int64(time.Second) {
			w = append(w, o)
		}
	}
	if len(w) > 40 {
		w = w[len(w)-40:]
	}
	return w
}

// describeWindow prints a window's operations, one a line.
func describeWindow(w []porcupine.Operation) string {
	var b strings.Builder
	for _, o := range w {
		in := o.Input.(regOp)
		ret := "pending"
		if o.Return != math.MaxInt64 {
			ret = time.Unix(0, o.Return).Format("15:04:05.000000")
		}
		what := fmt.Sprintf("read → %q", in.value)
		if in.write {
			what = fmt.Sprintf("write %q", in.value)
		}
		fmt.Fprintf(&b, "  %s %s on %s: %s [%s → %s] %s %s\n", in.op.Kind, in.op.ID, in.op.Node, what,
			time.Unix(0, o.Call).Format("15:04:05.000000"), ret, in.op.Outcome, in.op.Code)
	}
	return b.String()
}
