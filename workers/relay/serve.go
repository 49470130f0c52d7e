package relay

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/workers/pluginkit"
)

// PolicyEnv carries the policy (JSON) from the supervisor to the worker.
const PolicyEnv = "SVCD_RELAY_POLICY"

// EncodePolicy is the PolicyEnv value for p.
func EncodePolicy(p Policy) (string, error) {
	b, err := json.Marshal(p)
	return string(b), err
}

// maxMsg bounds the worker's gRPC messages: Status and TakeDirty carry every
// target, at most a few hundred bytes each.
const maxMsg = 8 << 20

// MaxMessage is the gRPC message limit both halves use.
func MaxMessage() int { return maxMsg }

// Serve is the body of `svcd worker relay`: an Engine behind go-plugin.
// The engine holds no durable state of its own; the supervisor restores it
// into every new instance, so a crash loses at most the unflushed counters.
func Serve(log hclog.Logger) error {
	var p Policy
	if v := os.Getenv(PolicyEnv); v != "" {
		if err := json.Unmarshal([]byte(v), &p); err != nil {
			return fmt.Errorf("%s: %w", PolicyEnv, err)
		}
	}
	if os.Getppid() == 1 {
		return fmt.Errorf("parent already gone")
	}
	e := NewEngine(p)
	tel := pluginkit.NewTelemetry()
	tel.Registry.MustRegister(NewCollector(e))
	pluginkit.Serve(Name, &Plugin{Impl: e}, maxMsg, log, tel)
	return nil
}
