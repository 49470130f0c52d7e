package workermgr

import "time"

// backoff is the delay before restart attempt n (1-based): base doubling
// per attempt, capped at max.
func backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n; i++ {
		d *= 2
		if d >= max || d <= 0 {
			return max
		}
	}
	if d > max {
		return max
	}
	return d
}

// crashWindow remembers recent unexpected exits to detect a crash loop.
type crashWindow struct {
	times []time.Time
}

// add records an exit at now and reports how many fall within window.
func (c *crashWindow) add(now time.Time, window time.Duration) int {
	keep := c.times[:0]
	for _, t := range c.times {
		if now.Sub(t) < window {
			keep = append(keep, t)
		}
	}
	c.times = append(keep, now)
	return len(c.times)
}

func (c *crashWindow) reset() { c.times = nil }
