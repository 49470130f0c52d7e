package renewal

import (
	"errors"
	"strings"
	"testing"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/workers/scheduler"
)

// Failed deliveries count up, and at renewal_max_failures in a row the
// conversation pauses itself with a reason; a paused one gets no more jobs.
func TestFailuresPauseAtMaxFailures(t *testing.T) {
	r := newRig(t, scheduler.Settings{MaxFailures: 3, MaxRenewals: 100})
	autoConv(t, r.store, "c1")
	r.plugin.err = errors.New("tab closed")
	for i := 1; i <= 3; i++ {
		if res := r.tick(t); res.Dispatched != 1 || res.Failed != 1 {
			t.Fatalf("tick %d: %+v", i, res)
		}
		c := r.conv(t, "c1")
		if c.ConsecutiveFailureCount != i || !strings.Contains(c.LastError, "tab closed") {
			t.Fatalf("after failure %d: count %d, last_error %q", i, c.ConsecutiveFailureCount, c.LastError)
		}
		wantPaused := i == 3
		if (c.AutomationStatus == raftstore.AutoPaused) != wantPaused {
			t.Fatalf("after failure %d: automation_status %q", i, c.AutomationStatus)
		}
	}
	c := r.conv(t, "c1")
	if !strings.Contains(c.PauseReason, "3 renewal deliveries failed in a row") || c.LastNonPausedAutomationStatus != raftstore.AutoAuto {
		t.Fatalf("paused conversation: reason %q, last non-paused %q", c.PauseReason, c.LastNonPausedAutomationStatus)
	}
	if res := r.tick(t); res.Projected != 0 || res.Dispatched != 0 {
		t.Fatalf("tick after the pause: %+v", res)
	}
	if n := r.plugin.count(); n != 3 {
		t.Fatalf("%d deliveries, want 3", n)
	}
}

// A success in between resets the failure count: only failures in a row pause.
func TestSuccessResetsFailureCount(t *testing.T) {
	r := newRig(t, scheduler.Settings{MaxFailures: 2, MaxRenewals: 100})
	autoConv(t, r.store, "c1")
	r.plugin.err = errors.New("tab closed")
	r.tick(t)
	r.plugin.err = nil
	r.tick(t)
	if c := r.conv(t, "c1"); c.ConsecutiveFailureCount != 0 || c.LastError != "" {
		t.Fatalf("after a success: %+v", c)
	}
	r.plugin.err = errors.New("tab closed")
	r.tick(t)
	if c := r.conv(t, "c1"); c.AutomationStatus != raftstore.AutoAuto || c.ConsecutiveFailureCount != 1 {
		t.Fatalf("one failure after a success paused or miscounted: %+v", c)
	}
}

// A plugin that answers "not delivered" is a failure with its code kept.
func TestPluginRefusalIsAFailureWithItsCode(t *testing.T) {
	r := newRig(t, scheduler.Settings{MaxFailures: 3})
	autoConv(t, r.store, "c1")
	r.plugin.result = bridgeproto.InjectResult{InjectID: "inj-2", OK: false, Error: &bridgeproto.ErrorBody{Code: "user_typing"}}
	if res := r.tick(t); res.Failed != 1 {
		t.Fatalf("tick: %+v", res)
	}
	j := r.store.Jobs("c1", 1)[0]
	if j.Status != raftstore.JobFailed || !strings.Contains(j.LastError, "user_typing") || j.InjectID != "inj-2" {
		t.Fatalf("job: %+v", j)
	}
}

// Renewals without a new AI reply count up and pause the conversation at
// renewal_max_renewals; a new reply starts the count afresh.
func TestRenewalsWithoutReplyPauseAtMaxRenewals(t *testing.T) {
	r := newRig(t, scheduler.Settings{MaxFailures: 3, MaxRenewals: 2})
	autoConv(t, r.store, "c1")
	r.tick(t)
	if c := r.conv(t, "c1"); c.RepeatedRenewalCount != 1 || c.AutomationStatus != raftstore.AutoAuto {
		t.Fatalf("after one renewal: %+v", c)
	}
	l := raftstore.ConvLink{LocalID: "c1", Platform: "platform_a"}
	if _, err := r.store.w.Apply(testCtx(t), raftstore.CmdConvMessage, raftstore.ConvMessage{ConvLink: l, MessageID: "m-new"}); err != nil {
		t.Fatal(err)
	}
	if c := r.conv(t, "c1"); c.RepeatedRenewalCount != 0 {
		t.Fatalf("a new reply left repeated_renewal_count at %d", c.RepeatedRenewalCount)
	}
	r.tick(t)
	if c := r.conv(t, "c1"); c.RepeatedRenewalCount != 1 || c.AutomationStatus != raftstore.AutoAuto {
		t.Fatalf("first renewal after the reply: %+v", c)
	}
	r.tick(t)
	c := r.conv(t, "c1")
	if c.AutomationStatus != raftstore.AutoPaused || c.RepeatedRenewalCount != 2 || !strings.Contains(c.PauseReason, "renewal repeated 2 times") {
		t.Fatalf("after max renewals: %+v", c)
	}
	if res := r.tick(t); res.Projected != 0 || res.Dispatched != 0 {
		t.Fatalf("tick after the pause: %+v", res)
	}
	if n := r.plugin.count(); n != 3 {
		t.Fatalf("%d deliveries, want 3", n)
	}
}

// Switching back to auto starts the counts afresh, so the conversation is
// not paused again by the first renewal.
func TestAutoAgainResetsCounts(t *testing.T) {
	r := newRig(t, scheduler.Settings{MaxFailures: 3, MaxRenewals: 1})
	autoConv(t, r.store, "c1")
	r.tick(t)
	if c := r.conv(t, "c1"); c.AutomationStatus != raftstore.AutoPaused {
		t.Fatalf("not paused at max_renewals 1: %+v", c)
	}
	c, err := r.store.SetStatus(testCtx(t), "c1", raftstore.AutoAuto, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.RepeatedRenewalCount != 0 || c.ConsecutiveFailureCount != 0 || c.PauseReason != "" {
		t.Fatalf("auto again: %+v", c)
	}
}
