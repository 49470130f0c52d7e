package main

import (
	"context"
	"fmt"
	"os"

	"github.com/svcd/svcd/shared/logging"
	"github.com/svcd/svcd/workers/agentd"
	"github.com/svcd/svcd/workers/hostops"
	"github.com/svcd/svcd/workers/relay"
	"github.com/svcd/svcd/workers/scheduler"
)

// runWorker is the hidden `svcd worker NAME` entry: the supervisor's worker
// manager re-executes this binary (os.Executable) with it, and go-plugin's
// handshake then runs over stdout. Nothing may print to stdout here before
// the handshake; logs go to stderr as JSON so go-plugin can relay them with
// their levels into the supervisor's log.
func runWorker(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: svcd worker NAME (started by svcd serve, not by hand)")
	}
	name := args[0]
	switch name {
	case hostops.Name:
		level := os.Getenv("SVCD_WORKER_LOG_LEVEL")
		if level == "" {
			level = "info"
		}
		return hostops.Serve(logging.New("hostops", level, true))
	case relay.Name:
		level := os.Getenv("SVCD_WORKER_LOG_LEVEL")
		if level == "" {
			level = "info"
		}
		return relay.Serve(logging.New("relay", level, true))
	case scheduler.Name:
		level := os.Getenv("SVCD_WORKER_LOG_LEVEL")
		if level == "" {
			level = "info"
		}
		return scheduler.Serve(logging.New("scheduler", level, true))
	case agentd.Name:
		level := os.Getenv("SVCD_WORKER_LOG_LEVEL")
		if level == "" {
			level = "info"
		}
		return agentd.ServeWorker(logging.New("agentd", level, true))
	case hostops.ShimName:
		// Not a plugin: the resource-limit shim in front of an exec child.
		return hostops.RunShim(args[1:])
	}
	return fmt.Errorf("unknown worker %q", name)
}
