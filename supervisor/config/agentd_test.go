package config

import (
	"strings"
	"testing"
)

// TestAgentdValidation: the defaults pass; a non-loopback listen, an empty
// command and an unknown approval policy are refused with their names.
func TestAgentdValidation(t *testing.T) {
	if errs := Defaults().validateAgentd(); len(errs) != 0 {
		t.Fatalf("defaults refused: %v", errs)
	}
	for _, c := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.AgentdListen = "0.0.0.0:4319" }, "loopback"},
		{func(c *Config) { c.AgentdListen = "nope" }, "agentd_listen"},
		{func(c *Config) { c.AgentdCommand = "  " }, "agentd_command"},
		{func(c *Config) { c.AgentdApprovalPolicy = "yolo" }, "agentd_approval_policy"},
	} {
		cfg := Defaults()
		c.set(&cfg)
		errs := cfg.validateAgentd()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("want an error naming %s, got %v", c.want, errs)
		}
	}
	cfg, err := Load("svcd", nil, func(k string) string {
		return map[string]string{"SVC_AGENTD_LISTEN": "127.0.0.1:5000", "SVC_AGENTD_SPAWN": "true"}[k]
	})
	if err != nil || cfg.AgentdListen != "127.0.0.1:5000" || !cfg.AgentdSpawn {
		t.Fatalf("env: %v %+v", err, cfg.AgentdListen)
	}
}
