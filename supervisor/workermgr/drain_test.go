package workermgr

import (
	"testing"
	"time"
)

// A rolling restart's drain follows DrainTimeoutAt when it is set (a
// SIGHUP raised exec_timeout_max_ms), and DrainTimeout otherwise.
func TestDrainTimeoutFollowsDrainTimeoutAt(t *testing.T) {
	now := 10 * time.Second
	o := Options{DrainTimeout: 5 * time.Second, DrainTimeoutAt: func() time.Duration { return now }}
	if got := o.drainTimeout(); got != 10*time.Second {
		t.Fatalf("drain %s, want DrainTimeoutAt's 10s", got)
	}
	now = 20 * time.Second
	if got := o.drainTimeout(); got != 20*time.Second {
		t.Fatalf("drain %s after the change, want 20s", got)
	}
	o.DrainTimeoutAt = nil
	if got := o.drainTimeout(); got != 5*time.Second {
		t.Fatalf("drain %s without DrainTimeoutAt, want 5s", got)
	}
}
