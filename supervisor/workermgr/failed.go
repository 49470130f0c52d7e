package workermgr

import (
	"fmt"
	"time"
)

// markFailed makes the worker failed after a crash loop of n exits and
// returns how long until it tries again on its own: FailedRetry, doubled at
// every further crash loop without a stable run between, capped at
// FailedRetryMax (Nomad's reschedule delay). A host where a memory hog took
// the worker down a few times gets exec back without an operator.
// Call with mu held.
func (s *slot) markFailed(now time.Time, n int) time.Duration {
	d := failedDelay(s.failedRounds, s.m.opts.FailedRetry, s.m.opts.FailedRetryMax)
	s.failedRounds++
	s.state = StateFailed
	s.nextReason = ReasonFailedRetry // what the retry counts as, unless an operator restarts first
	s.nextRetry = time.Time{}
	s.retryAt = now.Add(d)
	s.failedReason = fmt.Sprintf("crash loop: %d exits within %s (last exit: %s)", n, s.m.opts.CrashLoopWindow, describe(s.lastExit))
	if s.lastError != "" {
		s.failedReason += "; last error: " + s.lastError
	}
	s.notify()
	return d
}

// failedDelay is base doubled rounds times, at most max.
func failedDelay(rounds int, base, max time.Duration) time.Duration {
	d := base
	for i := 0; i < rounds && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}
