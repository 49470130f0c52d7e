package chaos

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// The checker itself: a read that goes back in time is caught and its
// window printed; a write with no answer may land late; a refused one
// (4xx) never lands.
func TestLinearCheckerOnKnownHistories(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := func(id string, from, to int, outcome string, status int) *Op {
		return &Op{ID: id, Kind: "mode_write", Node: "n1", Start: at(from), End: at(to), Outcome: outcome, Status: status}
	}
	rd := func(id string, from, to int, saw string) *Op {
		return &Op{ID: id, Kind: "mode_read", Node: "n2", Start: at(from), End: at(to), Outcome: "ok", Status: 200, Detail: map[string]any{"reason": saw}}
	}
	// Earlier history, seconds before each case: the printed window must
	// leave it out.
	noise := []*Op{w("w0", -5000, -4995, "ok", 200), rd("r0", -4994, -4993, "w0"), w("w9", -4992, -4991, "ok", 200), rd("r9", -4990, -4989, "w9")}
	for _, tc := range []struct {
		name string
		ops  []*Op
		bad  bool
	}{
		{"in order", append(noise, w("w1", 20, 30, "ok", 200), rd("r1", 31, 32, "w1")), false},
		{"concurrent read may miss the write", append(noise, w("w1", 20, 30, "ok", 200), rd("r1", 25, 26, "w9")), false},
		{"back in time after the ack", append(noise, w("w1", 20, 30, "ok", 200), rd("r1", 31, 32, "w1"), rd("r2", 40, 41, "w9")), true},
		{"a write with no answer lands late", append(noise, w("w1", 20, 30, "ambiguous", 0), rd("r1", 500, 501, "w1")), false},
		{"a 503 write may have landed", append(noise, w("w1", 20, 30, "failed", 503), rd("r1", 500, 501, "w1")), false},
		{"a 422 write never lands", append(noise, w("w1", 20, 30, "failed", 422), rd("r1", 500, 501, "w1")), true},
		{"the old value again once the new one was read", append(noise, w("w1", 20, 30, "ambiguous", 0), rd("r1", 40, 41, "w1"), rd("r2", 50, 51, "w9")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken, figures := checkLinearizable(tc.ops)
			if (len(broken) > 0) != tc.bad {
				t.Fatalf("broken %v (figures %v), want bad=%v", broken, figures, tc.bad)
			}
			if tc.bad && (!strings.Contains(broken[0], "smallest bad window") || strings.Contains(broken[0], "r0 ")) {
				t.Fatalf("window not shrunk: %s", broken[0])
			}
			if tc.bad {
				t.Log(broken[0])
			}
		})
	}
}

// A linearizable history the size of a 75 s run (3,000 writes, 5,000
// reads, one write in ten without an answer, overlapping calls) is proved
// Ok, not left Unknown at the timeout.
func TestLinearCheckerScalesToARun(t *testing.T) {
	rnd := rand.New(rand.NewSource(33))
	t0 := time.Unix(1_800_000_000, 0)
	var ops []*Op
	current := ""
	for k := 0; k < 8000; k++ {
		point := t0.Add(time.Duration(k) * 100 * time.Microsecond)
		start := point.Add(-time.Duration(rnd.Intn(400)) * time.Microsecond)
		end := point.Add(time.Duration(rnd.Intn(400)) * time.Microsecond)
		if rnd.Intn(8) < 3 {
			id := fmt.Sprintf("w%d", k)
			op := &Op{ID: id, Kind: "mode_write", Node: "n1", Start: start, End: end, Outcome: "ok", Status: 200}
			if rnd.Intn(10) == 0 {
				op.Outcome, op.Status = "ambiguous", 0
			}
			current = id
			ops = append(ops, op)
			continue
		}
		ops = append(ops, &Op{ID: fmt.Sprintf("r%d", k), Kind: "mode_read", Node: "n2", Start: start, End: end, Outcome: "ok", Status: 200, Detail: map[string]any{"reason": current}})
	}
	broken, figures := checkLinearizable(ops)
	if len(broken) > 0 || len(figures) != 1 || !strings.Contains(figures[0], ": Ok ") {
		t.Fatalf("broken %v, figures %v", broken, figures)
	}
	t.Log(figures[0])
}
