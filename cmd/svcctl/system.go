package main

import (
	"context"
	"net/http"
)

func runStatus(ctx context.Context, c *client, args []string) error {
	if err := noArgs("status", args); err != nil {
		return err
	}
	_, err := c.call(ctx, http.MethodGet, "/v1/status", nil, false)
	return err
}

func runSystem(ctx context.Context, c *client, args []string) error {
	if len(args) == 0 {
		return usageError("system needs one of: state, pause, resume, drain")
	}
	action := args[0]
	if action == "state" {
		if err := noArgs("system state", args[1:]); err != nil {
			return err
		}
		_, err := c.call(ctx, http.MethodGet, "/v1/system/state", nil, false)
		return err
	}
	if action != "pause" && action != "resume" && action != "drain" {
		return usageError("system: unknown action " + action + "; want state, pause, resume or drain")
	}
	fs := newFlags("system " + action)
	reason := fs.String("reason", "", "why")
	by := fs.String("by", "svcctl", "who asks")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		return usageError(flagHint(fs, err) + "usage: svcctl system " + action + " [--reason R] [--by WHO]")
	}
	_, err := c.call(ctx, http.MethodPost, "/v1/system/"+action, map[string]string{"requested_by": *by, "reason": *reason}, false)
	return err
}
