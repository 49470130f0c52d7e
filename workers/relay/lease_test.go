package relay

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/keyrange"
)

func lease(t *testing.T, e *Engine, r LeaseRequest) LeaseReply {
	t.Helper()
	reply, err := e.Lease(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// A grant is bounded by the window's room and the free in-flight places, and
// counts at once; tokens given back and outcomes reported undo the counts.
func TestLeaseCountsTokensLikeAdmissions(t *testing.T) {
	e, _ := newTestEngine(Policy{WindowMax: 10, MaxInFlight: 4})
	got := lease(t, e, LeaseRequest{Want: map[string]int{"a": 8}})
	if got.Granted["a"] != 4 || got.TTL != LeaseTTL {
		t.Fatalf("grant bounded by max_in_flight: %+v", got)
	}
	if more := lease(t, e, LeaseRequest{Want: map[string]int{"a": 1}}); more.Granted["a"] != 0 {
		t.Fatalf("grant while every place is leased: %+v", more)
	}
	got = lease(t, e, LeaseRequest{Returned: map[string]int{"a": 2},
		Outcomes: []Outcome{{Target: "a", Status: 200}, {Target: "a", Status: 200}}})
	st, _ := e.Status(context.Background(), keyrange.Range{})
	if st.Live["a"].InFlight != 0 || st.Targets["a"].WindowCount != 2 || st.Targets["a"].Admitted != 2 || len(got.Revoked) != 0 {
		t.Fatalf("after two used and two returned: live %+v state %+v reply %+v", st.Live["a"], st.Targets["a"], got)
	}
	got = lease(t, e, LeaseRequest{Want: map[string]int{"a": 100}})
	if got.Granted["a"] != 4 {
		t.Fatalf("second grant: %+v", got)
	}
	lease(t, e, LeaseRequest{Outcomes: []Outcome{{Target: "a", Status: 200}, {Target: "a", Status: 200}, {Target: "a", Status: 200}, {Target: "a", Status: 200}}})
	got = lease(t, e, LeaseRequest{Want: map[string]int{"a": 100}})
	if got.Granted["a"] != 4 {
		t.Fatalf("third grant: %+v", got)
	}
	// The window (10) now holds 2 + 4 + 4: one more admission fits, not two.
	lease(t, e, LeaseRequest{Returned: map[string]int{"a": 4}})
	st, _ = e.Status(context.Background(), keyrange.Range{})
	if st.Targets["a"].WindowCount != 6 {
		t.Fatalf("window count after giving four back: %+v", st.Targets["a"])
	}
}

// Failures in a batch trip the breaker and revoke the target; nothing is
// granted for it after that, and Admit refuses as before.
func TestLeaseBatchTripsTheBreakerAndRevokes(t *testing.T) {
	e, c := newTestEngine(Policy{BreakerFailures: 2, BackoffBaseMs: 10, BreakerOpenMs: 1000, MaxInFlight: 8})
	if got := lease(t, e, LeaseRequest{Want: map[string]int{"a": 4, "b": 4}}); got.Granted["a"] != 4 || got.Granted["b"] != 4 {
		t.Fatalf("grant: %+v", got)
	}
	got := lease(t, e, LeaseRequest{Outcomes: []Outcome{{Target: "a", Status: 500}, {Target: "a", Status: 502}, {Target: "b", Status: 200}},
		Want: map[string]int{"a": 4}})
	if !got.Changed || !slices.Equal(got.Revoked, []string{"a"}) || got.Granted["a"] != 0 {
		t.Fatalf("batch with two failures: %+v", got)
	}
	if d := admit(t, e, "a"); d.Allowed || d.Reason != "circuit_open" {
		t.Fatalf("admit after the trip: %+v", d)
	}
	// A backoff alone (one failure) also stops grants until it has passed.
	lease(t, e, LeaseRequest{Outcomes: []Outcome{{Target: "b", Status: 429, RetryAfterMs: 50}}})
	if got := lease(t, e, LeaseRequest{Want: map[string]int{"b": 1}}); got.Granted["b"] != 0 {
		t.Fatalf("grant during backoff: %+v", got)
	}
	c.add(60 * time.Millisecond)
	if got := lease(t, e, LeaseRequest{Want: map[string]int{"b": 1}}); got.Granted["b"] != 1 {
		t.Fatalf("grant after the backoff: %+v", got)
	}
}

// A restarted engine never granted what the supervisor gives back or
// reports: counts never go negative, and the outcomes still count.
func TestLeaseIntoARestartedEngine(t *testing.T) {
	e, _ := newTestEngine(Policy{BreakerFailures: 3})
	got := lease(t, e, LeaseRequest{Returned: map[string]int{"a": 5},
		Outcomes: []Outcome{{Target: "a", Status: 503}, {Target: "a", Status: 503}}})
	st, _ := e.Status(context.Background(), keyrange.Range{})
	if st.Live["a"].InFlight != 0 || st.Targets["a"].Admitted != 0 || st.Targets["a"].WindowCount != 0 || st.Targets["a"].BreakerFailures != 2 || !got.Changed {
		t.Fatalf("restarted engine: live %+v state %+v", st.Live["a"], st.Targets["a"])
	}
}

// Tokens from an old window given back do not free places in the new one.
func TestLeaseGiveBackAcrossAWindow(t *testing.T) {
	e, c := newTestEngine(Policy{WindowMs: 1000, WindowMax: 5, MaxInFlight: 10})
	lease(t, e, LeaseRequest{Want: map[string]int{"a": 5}})
	c.add(1100 * time.Millisecond)
	if d := admit(t, e, "a"); !d.Allowed {
		t.Fatalf("admit in a new window: %+v", d)
	}
	lease(t, e, LeaseRequest{Returned: map[string]int{"a": 5}})
	st, _ := e.Status(context.Background(), keyrange.Range{})
	if st.Targets["a"].WindowCount != 1 || st.Live["a"].InFlight != 1 {
		t.Fatalf("after giving old tokens back: %+v %+v", st.Targets["a"], st.Live["a"])
	}
}
