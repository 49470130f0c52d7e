package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// agentdEnvVars are the SVC_AGENTD_* variables.
func agentdEnvVars() []envVar {
	return []envVar{
		{"SVC_AGENTD_LISTEN", func(c *Config, v string) error { c.AgentdListen = v; return nil }},
		{"SVC_AGENTD_SPAWN", func(c *Config, v string) (err error) { c.AgentdSpawn, err = strconv.ParseBool(v); return }},
		{"SVC_AGENTD_COMMAND", func(c *Config, v string) error { c.AgentdCommand = v; return nil }},
		{"SVC_AGENTD_CODEX_HOME", func(c *Config, v string) error { c.AgentdCodexHome = v; return nil }},
		{"SVC_AGENTD_APPROVAL_POLICY", func(c *Config, v string) error { c.AgentdApprovalPolicy = v; return nil }},
	}
}

// validateAgentd checks the agentd block: a loopback listen address, a
// command, a known approval policy.
func (c Config) validateAgentd() []error {
	var errs []error
	// Empty (the default): a free loopback port chosen at spawn (issue 34).
	if c.AgentdListen != "" {
		host, _, err := net.SplitHostPort(c.AgentdListen)
		if err != nil {
			errs = append(errs, fmt.Errorf("agentd_listen %q: %v", c.AgentdListen, err))
		} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			errs = append(errs, fmt.Errorf("agentd_listen %q must be a loopback address", c.AgentdListen))
		}
	}
	if len(strings.Fields(c.AgentdCommand)) == 0 {
		errs = append(errs, errors.New("agentd_command must not be empty (default: codex app-server)"))
	}
	if c.AgentdApprovalPolicy != "decline" && c.AgentdApprovalPolicy != "accept" {
		errs = append(errs, fmt.Errorf("agentd_approval_policy %q: want decline or accept", c.AgentdApprovalPolicy))
	}
	return errs
}
