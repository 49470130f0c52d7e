package scheduler

import (
	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/workers/pluginkit"
)

// MaxMessage bounds the worker's gRPC messages (a renewal view of every
// conversation and open job).
func MaxMessage() int { return 16 << 20 }

// Serve is the body of `svcd worker scheduler`.
func Serve(log hclog.Logger) error {
	pluginkit.Serve(Name, &Plugin{Impl: Engine{}}, MaxMessage(), log, nil)
	return nil
}
