package bridge

import (
	"testing"
	"time"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// The reader hands a stream's event to the sink only when it came alone
// (two quiet gaps), every frame queued on C before it was written, and the
// consumer is not writing; anything else queues on C, and a cleared sink is
// never called again. Each rule's removal fails one of the checks.
func TestPendingSinkTakesOnlyLoneEventsInOrder(t *testing.T) {
	p := newPending("r1", kindRequest, bridgeproto.PlatformB, nil, 64)
	var direct []int64
	p.SetSink(func(ev *bridgeproto.StreamEvent) { direct = append(direct, ev.Seq) })
	at := time.Now().UnixNano()
	seq := int64(0)
	// route one event after gap; report whether the sink took it.
	route := func(gap time.Duration) bool {
		at += int64(gap)
		seq++
		before := len(direct)
		if !p.route(&bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: "r1", Seq: seq}, at) {
			t.Fatalf("event %d not delivered", seq)
		}
		return len(direct) > before
	}
	write := func() { // the consumer writes what C holds
		for len(p.C) > 0 {
			<-p.C
			p.Write(func() {})
		}
	}
	const quiet, burst = 5 * time.Millisecond, 10 * time.Microsecond

	if route(quiet) {
		t.Fatal("the first event (no quiet gap before the frame ahead of it) went to the sink")
	}
	write()
	if !route(quiet) || !route(quiet) {
		t.Fatal("lone events did not go to the sink")
	}
	if route(burst) || route(burst) {
		t.Fatal("a burst went to the sink")
	}
	if route(quiet) {
		t.Fatal("the event after a burst's stall went to the sink")
	}
	if route(quiet) {
		t.Fatal("an event went to the sink ahead of queued frames not yet written")
	}
	write()
	if !route(quiet) {
		t.Fatal("lone events again: not to the sink")
	}
	p.Lock() // the consumer is writing
	if route(quiet) {
		t.Fatal("the sink ran while the consumer held the lock")
	}
	p.Unlock()
	write()
	if !route(quiet) {
		t.Fatal("after the consumer wrote: not to the sink")
	}
	p.Lock()
	p.ClearSink()
	p.Unlock()
	if route(quiet) || route(quiet) {
		t.Fatal("a cleared sink was called")
	}
	if got := len(direct); got != 4 {
		t.Fatalf("sink took %d events (%v), want 4", got, direct)
	}
	for i := 1; i < len(direct); i++ {
		if direct[i] <= direct[i-1] {
			t.Fatalf("sink order %v", direct)
		}
	}
}
