package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

const renewalUsage = "renewal ls | get ID | jobs [ID] | manual ID | auto ID | pause ID [REASON] | scheduler   renewal conversations and jobs"

// runRenewal reads and switches renewal conversations.
func runRenewal(ctx context.Context, c *client, args []string) error {
	path := func(id, suffix string) string { return "/v1/renewal/conversations/" + url.PathEscape(id) + suffix }
	var err error
	switch {
	case len(args) == 1 && args[0] == "ls":
		_, err = c.call(ctx, http.MethodGet, "/v1/renewal/conversations", nil, false)
	case len(args) == 1 && args[0] == "scheduler":
		_, err = c.call(ctx, http.MethodGet, "/v1/renewal/scheduler", nil, false)
	case len(args) == 2 && args[0] == "get":
		_, err = c.call(ctx, http.MethodGet, path(args[1], ""), nil, false)
	case len(args) >= 1 && len(args) <= 2 && args[0] == "jobs":
		q := "/v1/renewal/jobs"
		if len(args) == 2 {
			q += "?local_conversation_id=" + url.QueryEscape(args[1])
		}
		_, err = c.call(ctx, http.MethodGet, q, nil, false)
	case len(args) == 2 && (args[0] == "manual" || args[0] == "auto"):
		_, err = c.call(ctx, http.MethodPost, path(args[1], "/"+args[0]), map[string]string{}, false)
	case len(args) >= 2 && args[0] == "pause":
		_, err = c.call(ctx, http.MethodPost, path(args[1], "/paused"), map[string]string{"pause_reason": strings.Join(args[2:], " ")}, false)
	default:
		return usageError("usage: svcctl " + renewalUsage)
	}
	return err
}

const tasksUsage = "tasks ls [STATUS] | get ID | logs ID [RUN_ID]   tasks, their runs and logs"

// runTasks reads tasks.
func runTasks(ctx context.Context, c *client, args []string) error {
	var err error
	switch {
	case len(args) >= 1 && len(args) <= 2 && args[0] == "ls":
		q := "/v1/tasks"
		if len(args) == 2 {
			q += "?status=" + url.QueryEscape(args[1])
		}
		_, err = c.call(ctx, http.MethodGet, q, nil, false)
	case len(args) == 2 && args[0] == "get":
		_, err = c.call(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(args[1]), nil, false)
	case len(args) >= 2 && len(args) <= 3 && args[0] == "logs":
		q := "/v1/tasks/" + url.PathEscape(args[1]) + "/logs"
		if len(args) == 3 {
			q += "?run_id=" + url.QueryEscape(args[2])
		}
		_, err = c.call(ctx, http.MethodGet, q, nil, false)
	default:
		return usageError("usage: svcctl " + tasksUsage)
	}
	return err
}

func runControllers(ctx context.Context, c *client, args []string) error {
	if err := noArgs("controllers", args); err != nil {
		return err
	}
	_, err := c.call(ctx, http.MethodGet, "/v1/controllers", nil, false)
	return err
}
