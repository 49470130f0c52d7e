package keyrange

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Walk visits exactly the keys a filter of every key with Has keeps, in
// order, whatever the range (bounds on keys, between keys, out of range,
// None) and after random adds and removes.
func TestWalkIsAFilterOfEveryKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() string { return fmt.Sprintf("platform_a/client-%d/user%d", rng.IntN(5), rng.IntN(40)) }
	set := map[string]bool{}
	var k Keys
	for step := 0; step < 3000; step++ {
		if x := key(); rng.IntN(3) == 0 {
			delete(set, x)
			k.Remove(x)
		} else {
			set[x] = true
			k.Add(x)
		}
		if step%100 == 0 { // Reset gives the same set as the adds and removes
			var r Keys
			Reset(&r, set)
			if !slices.Equal(r.sorted, k.sorted) {
				t.Fatalf("step %d: Reset %v, adds and removes %v", step, r.sorted, k.sorted)
			}
		}
		r := Range{None: rng.IntN(10) == 0, Bounded: rng.IntN(2) == 0}
		if rng.IntN(4) != 0 {
			r.After = key()
		}
		r.Through = key()
		var want, got []string
		for x := range set {
			if r.Has(x) {
				want = append(want, x)
			}
		}
		slices.Sort(want)
		k.Walk(r, func(x string) bool { got = append(got, x); return true })
		if !slices.Equal(got, want) || k.Len() != len(set) {
			t.Fatalf("step %d: range %+v: walk %v, want %v (len %d of %d)", step, r, got, want, k.Len(), len(set))
		}
	}
}

// Walk stops when fn says so.
func TestWalkStops(t *testing.T) {
	var k Keys
	for _, x := range []string{"c", "a", "b", "a"} {
		k.Add(x)
	}
	var got []string
	k.Walk(Range{}, func(x string) bool { got = append(got, x); return len(got) < 2 })
	if !slices.Equal(got, []string{"a", "b"}) || k.Len() != 3 {
		t.Fatalf("walk %v (len %d), want [a b] of 3", got, k.Len())
	}
}
