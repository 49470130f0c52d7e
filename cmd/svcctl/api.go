package main

import (
	"context"
	"net/http"
)

// runAPI prints the daemon's OpenAPI 3.1 document (GET /v1/openapi.json).
func runAPI(ctx context.Context, c *client, args []string) error {
	if len(args) != 0 {
		return usageError("usage: svcctl api")
	}
	_, err := c.call(ctx, http.MethodGet, "/v1/openapi.json", nil, false)
	return err
}
