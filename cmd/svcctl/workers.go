package main

import (
	"context"
	"net/http"
)

// runWorkers lists the worker processes, or rolling-restarts one (or all).
func runWorkers(ctx context.Context, c *client, args []string) error {
	switch {
	case len(args) == 0:
		_, err := c.call(ctx, http.MethodGet, "/v1/workers", nil, false)
		return err
	case args[0] == "restart" && len(args) == 2:
		_, err := c.call(ctx, http.MethodPost, "/v1/workers/restart", map[string]string{"worker": args[1]}, true)
		return err
	}
	return usageError("usage: svcctl workers | svcctl workers restart NAME|all")
}
