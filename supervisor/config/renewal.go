package config

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Renewal scheduler settings (docs/renewal.md). Zero values take the
// defaults below.
const (
	DefaultRenewalTickMs      = 5000
	DefaultRenewalIdleMs      = 600_000
	DefaultRenewalMessage     = "Please continue."
	DefaultRenewalMaxFailures = 3
	DefaultRenewalMaxRenewals = 5
)

// RenewalSettings is the effective scheduler configuration.
type RenewalSettings struct {
	Tick        time.Duration
	IdleAfterMs int64
	Message     string
	MaxFailures int
	MaxRenewals int
}

// Renewal returns the effective scheduler settings.
func (c Config) Renewal() RenewalSettings {
	r := RenewalSettings{Tick: time.Duration(c.RenewalTickMs) * time.Millisecond, IdleAfterMs: c.RenewalIdleMs, Message: c.RenewalMessage,
		MaxFailures: c.RenewalMaxFailures, MaxRenewals: c.RenewalMaxRenewals}
	if r.Tick <= 0 {
		r.Tick = DefaultRenewalTickMs * time.Millisecond
	}
	if r.IdleAfterMs <= 0 {
		r.IdleAfterMs = DefaultRenewalIdleMs
	}
	if r.Message == "" {
		r.Message = DefaultRenewalMessage
	}
	if r.MaxFailures <= 0 {
		r.MaxFailures = DefaultRenewalMaxFailures
	}
	if r.MaxRenewals <= 0 {
		r.MaxRenewals = DefaultRenewalMaxRenewals
	}
	return r
}

func (c Config) validateRenewal() []error {
	var errs []error
	for name, v := range map[string]int64{"renewal_tick_ms": c.RenewalTickMs, "renewal_idle_ms": c.RenewalIdleMs,
		"renewal_max_failures": int64(c.RenewalMaxFailures), "renewal_max_renewals": int64(c.RenewalMaxRenewals)} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative (0 means the default), got %d", name, v))
		}
	}
	if c.RenewalTickMs > 0 && c.RenewalTickMs < 50 {
		errs = append(errs, fmt.Errorf("renewal_tick_ms must be at least 50, got %d", c.RenewalTickMs))
	}
	if len(c.RenewalMessage) > 64<<10 || !utf8.ValidString(c.RenewalMessage) {
		errs = append(errs, fmt.Errorf("renewal_message must be valid UTF-8 of at most 64 KiB"))
	}
	return errs
}

func renewalEnvVars() []envVar {
	i64 := func(dst func(*Config) *int64) func(*Config, string) error {
		return func(c *Config, v string) (err error) { *dst(c), err = strconv.ParseInt(v, 10, 64); return }
	}
	i := func(dst func(*Config) *int) func(*Config, string) error {
		return func(c *Config, v string) (err error) { *dst(c), err = strconv.Atoi(v); return }
	}
	return []envVar{
		{"SVC_RENEWAL_TICK_MS", i64(func(c *Config) *int64 { return &c.RenewalTickMs })},
		{"SVC_RENEWAL_IDLE_MS", i64(func(c *Config) *int64 { return &c.RenewalIdleMs })},
		{"SVC_RENEWAL_MESSAGE", func(c *Config, v string) error { c.RenewalMessage = v; return nil }},
		{"SVC_RENEWAL_MAX_FAILURES", i(func(c *Config) *int { return &c.RenewalMaxFailures })},
		{"SVC_RENEWAL_MAX_RENEWALS", i(func(c *Config) *int { return &c.RenewalMaxRenewals })},
	}
}
