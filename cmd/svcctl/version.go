package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/svcd/svcd/shared/version"
)

// runVersion prints svcctl's own build, then the daemon's (GET /version) when
// it answers within a few seconds: the two can differ after an upgrade of
// one of them, which is what an operator asking for the version wants to see.
// An unreachable daemon is reported, not an error: the client's version is
// still known.
func runVersion(ctx context.Context, c *client, args []string) error {
	if err := noArgs("version", args); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "svcctl %s\n", version.Get())
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d, err := daemonVersion(ctx, c)
	if err != nil {
		fmt.Fprintf(c.out, "daemon at %s: %v\n", c.base, err)
		return nil
	}
	fmt.Fprintf(c.out, "daemon %s %s\n", d.Name, d)
	return nil
}

func daemonVersion(ctx context.Context, c *client) (version.Info, error) {
	var env struct {
		OK   bool         `json:"ok"`
		Data version.Info `json:"data"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/version", nil)
	if err != nil {
		return env.Data, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return env.Data, fmt.Errorf("not reachable (%v)", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || !env.OK {
		return env.Data, fmt.Errorf("GET /version answered %s, not a version summary", resp.Status)
	}
	return env.Data, nil
}
