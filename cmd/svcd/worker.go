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
	level := os.Getenv("SVCD_WORKER_LOG_LEVEL")
	if level == "" {
		level = "info"
	}
	// Each worker logs JSON to stderr under its own name.
	log := logging.NewWorker(name, level)
	switch name {
	case hostops.Name:
		return hostops.Serve(log)
	case relay.Name:
		return relay.Serve(log)
	case scheduler.Name:
		return scheduler.Serve(log)
	case agentd.Name:
		return agentd.ServeWorker(log)
	case hostops.ShimName:
		// Not a plugin: the resource-limit shim in front of an exec child.
		return hostops.RunShim(args[1:])
	}
	return fmt.Errorf("unknown worker %q", name)
}
