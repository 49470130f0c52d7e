package relay

import "time"

// Policy is the engine's tuning. Zero fields take the defaults.
type Policy struct {
	WindowMs        int64 `json:"window_ms"`         // rate-limit window length
	WindowMax       int   `json:"window_max"`        // requests admitted per window per target
	MaxInFlight     int   `json:"max_in_flight"`     // concurrent requests per target
	MaxWaitMs       int64 `json:"max_wait_ms"`       // how long Admit waits for a slot
	BackoffBaseMs   int64 `json:"backoff_base_ms"`   // first backoff after a 429/5xx
	BackoffMaxMs    int64 `json:"backoff_max_ms"`    // cap of the exponential backoff
	BreakerFailures int   `json:"breaker_failures"`  // consecutive failures that open the breaker
	BreakerOpenMs   int64 `json:"breaker_open_ms"`   // how long it stays open before a half-open probe
	FlushIntervalMs int64 `json:"flush_interval_ms"` // periodic persistence of window counters
}

// DefaultPolicy is the built-in tuning.
func DefaultPolicy() Policy {
	return Policy{
		WindowMs: 60_000, WindowMax: 120, MaxInFlight: 8, MaxWaitMs: 2_000,
		BackoffBaseMs: 1_000, BackoffMaxMs: 60_000,
		BreakerFailures: 5, BreakerOpenMs: 30_000,
		FlushIntervalMs: 5_000,
	}
}

// WithDefaults fills zero fields from DefaultPolicy.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	if p.WindowMs <= 0 {
		p.WindowMs = d.WindowMs
	}
	if p.WindowMax <= 0 {
		p.WindowMax = d.WindowMax
	}
	if p.MaxInFlight <= 0 {
		p.MaxInFlight = d.MaxInFlight
	}
	if p.MaxWaitMs <= 0 {
		p.MaxWaitMs = d.MaxWaitMs
	}
	if p.BackoffBaseMs <= 0 {
		p.BackoffBaseMs = d.BackoffBaseMs
	}
	if p.BackoffMaxMs <= 0 {
		p.BackoffMaxMs = d.BackoffMaxMs
	}
	if p.BreakerFailures <= 0 {
		p.BreakerFailures = d.BreakerFailures
	}
	if p.BreakerOpenMs <= 0 {
		p.BreakerOpenMs = d.BreakerOpenMs
	}
	if p.FlushIntervalMs <= 0 {
		p.FlushIntervalMs = d.FlushIntervalMs
	}
	return p
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
