package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// cgnat is 100.64.0.0/10: the only private range the browser bridge may be
// opened to (SPEC.md: loopback, local, and explicitly allowed 100.x peers).
var cgnat = &net.IPNet{IP: net.IPv4(100, 64, 0, 0).To4(), Mask: net.CIDRMask(10, 32)}

// BrowserPeerNets parses browser_allowed_peers: IPs or CIDRs, each inside
// 100.64.0.0/10.
func (c Config) BrowserPeerNets() ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, p := range c.BrowserAllowedPeers {
		if !strings.Contains(p, "/") {
			p += "/32"
		}
		_, n, err := net.ParseCIDR(p)
		if err != nil {
			return nil, fmt.Errorf("browser_allowed_peers %q: %w", p, err)
		}
		ones, _ := n.Mask.Size()
		if n.IP.To4() == nil || !cgnat.Contains(n.IP) || ones < 10 {
			return nil, fmt.Errorf("browser_allowed_peers %q: only addresses inside 100.64.0.0/10 may be allowed", p)
		}
		out = append(out, n)
	}
	return out, nil
}

// BrowserOrigins is the allowed Origin list: browser_allowed_origins plus
// chrome-extension://<id> for each browser_extension_ids entry.
func (c Config) BrowserOrigins() []string {
	out := append([]string{}, c.BrowserAllowedOrigins...)
	for _, id := range c.BrowserExtensionIDs {
		out = append(out, "chrome-extension://"+id)
	}
	return out
}

func (c Config) validateBrowser() []error {
	var errs []error
	if _, err := c.BrowserPeerNets(); err != nil {
		errs = append(errs, err)
	}
	if p := c.BrowserPairing; p != "" && p != PairingCodes && p != PairingToken {
		errs = append(errs, fmt.Errorf("browser_pairing %q: want %q (one-time codes, the default) or %q (the shared token in hello)", p, PairingCodes, PairingToken))
	}
	for _, id := range c.BrowserExtensionIDs {
		if id == "" || strings.ContainsAny(id, ":/ ") {
			errs = append(errs, fmt.Errorf("browser_extension_ids %q: want the bare extension id", id))
		}
	}
	for _, o := range c.BrowserAllowedOrigins {
		if err := validOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("browser_allowed_origins %w", err))
		}
	}
	for name, v := range map[string]int64{
		"browser_keepalive_ms": c.BrowserKeepaliveMs, "browser_stale_after_ms": c.BrowserStaleAfterMs,
		"browser_lost_after_ms": c.BrowserLostAfterMs, "browser_sweep_interval_ms": c.BrowserSweepIntervalMs,
		"browser_action_timeout_ms": c.BrowserActionTimeoutMs, "browser_request_timeout_ms": c.BrowserRequestTimeoutMs,
		"browser_max_message_bytes": c.BrowserMaxMessageBytes, "browser_max_unpaired": c.BrowserMaxUnpaired, "relay_window_ms": c.RelayWindowMs, "relay_window_max": c.RelayWindowMax,
		"relay_max_in_flight": c.RelayMaxInFlight, "relay_max_wait_ms": c.RelayMaxWaitMs, "relay_backoff_base_ms": c.RelayBackoffBaseMs,
		"relay_backoff_max_ms": c.RelayBackoffMaxMs, "relay_breaker_failures": c.RelayBreakerFailures,
		"relay_breaker_open_ms": c.RelayBreakerOpenMs, "relay_flush_interval_ms": c.RelayFlushIntervalMs,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative (0 means the default), got %d", name, v))
		}
	}
	return errs
}

// browserEnvVars are the SVC_BROWSER_* and SVC_RELAY_* variables.
func browserEnvVars() []envVar {
	num := func(dst func(*Config) *int64) func(*Config, string) error {
		return func(c *Config, v string) (err error) { *dst(c), err = strconv.ParseInt(v, 10, 64); return }
	}
	list := func(dst func(*Config) *[]string) func(*Config, string) error {
		return func(c *Config, v string) error { *dst(c) = splitList(v); return nil }
	}
	return []envVar{
		{"SVC_BROWSER_PAIRING", func(c *Config, v string) error { c.BrowserPairing = v; return nil }},
		{"SVC_BROWSER_PAIRING_TOKEN", func(c *Config, v string) error { c.BrowserPairingToken = v; return nil }},
		{"SVC_BROWSER_EXTENSION_IDS", list(func(c *Config) *[]string { return &c.BrowserExtensionIDs })},
		{"SVC_BROWSER_ALLOWED_ORIGINS", list(func(c *Config) *[]string { return &c.BrowserAllowedOrigins })},
		{"SVC_BROWSER_ALLOWED_PEERS", list(func(c *Config) *[]string { return &c.BrowserAllowedPeers })},
		{"SVC_BROWSER_KEEPALIVE_MS", num(func(c *Config) *int64 { return &c.BrowserKeepaliveMs })},
		{"SVC_BROWSER_STALE_AFTER_MS", num(func(c *Config) *int64 { return &c.BrowserStaleAfterMs })},
		{"SVC_BROWSER_LOST_AFTER_MS", num(func(c *Config) *int64 { return &c.BrowserLostAfterMs })},
		{"SVC_BROWSER_SWEEP_INTERVAL_MS", num(func(c *Config) *int64 { return &c.BrowserSweepIntervalMs })},
		{"SVC_BROWSER_ACTION_TIMEOUT_MS", num(func(c *Config) *int64 { return &c.BrowserActionTimeoutMs })},
		{"SVC_BROWSER_REQUEST_TIMEOUT_MS", num(func(c *Config) *int64 { return &c.BrowserRequestTimeoutMs })},
		{"SVC_BROWSER_MAX_MESSAGE_BYTES", num(func(c *Config) *int64 { return &c.BrowserMaxMessageBytes })},
		{"SVC_BROWSER_MAX_UNPAIRED", num(func(c *Config) *int64 { return &c.BrowserMaxUnpaired })},
		{"SVC_RELAY_WINDOW_MS", num(func(c *Config) *int64 { return &c.RelayWindowMs })},
		{"SVC_RELAY_WINDOW_MAX", num(func(c *Config) *int64 { return &c.RelayWindowMax })},
		{"SVC_RELAY_MAX_IN_FLIGHT", num(func(c *Config) *int64 { return &c.RelayMaxInFlight })},
		{"SVC_RELAY_MAX_WAIT_MS", num(func(c *Config) *int64 { return &c.RelayMaxWaitMs })},
		{"SVC_RELAY_BACKOFF_BASE_MS", num(func(c *Config) *int64 { return &c.RelayBackoffBaseMs })},
		{"SVC_RELAY_BACKOFF_MAX_MS", num(func(c *Config) *int64 { return &c.RelayBackoffMaxMs })},
		{"SVC_RELAY_BREAKER_FAILURES", num(func(c *Config) *int64 { return &c.RelayBreakerFailures })},
		{"SVC_RELAY_BREAKER_OPEN_MS", num(func(c *Config) *int64 { return &c.RelayBreakerOpenMs })},
		{"SVC_RELAY_FLUSH_INTERVAL_MS", num(func(c *Config) *int64 { return &c.RelayFlushIntervalMs })},
		{"SVC_RELAY_IN_PROCESS", func(c *Config, v string) (err error) { c.RelayInProcess, err = strconv.ParseBool(v); return }},
	}
}

// BundledExtensionID is the id Chromium derives from the public key pinned
// in extension/manifest.json; the daemon allows its origin by default.
const BundledExtensionID = "bikejchgdphpcbimhpcoegbjcbplcdpl"

// browser_pairing values (issue 25 §1).
const (
	PairingCodes = "codes" // hello needs a pairing code or the credential one gave
	PairingToken = "token" // the shared (or browser_pairing_token) token in hello works too
)

// TokenPairing reports whether a hello with the shared token is accepted.
func (c Config) TokenPairing() bool { return c.BrowserPairing == PairingToken }
