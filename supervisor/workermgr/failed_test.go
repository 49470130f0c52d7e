package workermgr

import (
	"testing"
	"time"
)

func TestFailedDelayDoublesToCap(t *testing.T) {
	base, max := 5*time.Minute, time.Hour
	want := []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, time.Hour, time.Hour}
	for rounds, w := range want {
		if got := failedDelay(rounds, base, max); got != w {
			t.Errorf("round %d: %s, want %s", rounds, got, w)
		}
	}
	if got := failedDelay(1000, base, max); got != max {
		t.Errorf("many rounds: %s, want the cap", got)
	}
}
