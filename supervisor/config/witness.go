package config

import (
	"flag"
	"fmt"
	"net"
	"strings"
)

// witness_listen (SVC_WITNESS_LISTEN, -witness-listen) is the witness's
// optional HTTP listener for /healthz, /readyz and /metrics
// (supervisor/witnessobs; issue 35). Empty: none, as before. Loopback only:
// the witness checks no token, so nothing off the host may reach it.

func witnessEnvVars() []envVar {
	return []envVar{
		{"SVC_WITNESS_LISTEN", func(c *Config, v string) error { c.WitnessListen = v; return nil }},
	}
}

func bindWitnessFlags(fs *flag.FlagSet) map[string]func(*Config) {
	listen := fs.String("witness-listen", "", "witness only: serve /healthz, /readyz and /metrics on this loopback address (empty: no listener)")
	return map[string]func(*Config){
		"witness-listen": func(c *Config) { c.WitnessListen = *listen },
	}
}

// validateWitnessListen refuses a witness_listen that is not host:port on
// loopback.
func (c Config) validateWitnessListen() []error {
	if c.WitnessListen == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(c.WitnessListen)
	if err != nil {
		return []error{fmt.Errorf("witness_listen %q: %w", c.WitnessListen, err)}
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return []error{fmt.Errorf("witness_listen %q must be a loopback address (127.0.0.1:PORT or [::1]:PORT): the witness checks no token", c.WitnessListen)}
	}
	return nil
}
