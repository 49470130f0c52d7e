package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// Pairing subcommands (issue 25 §1): issue a one-time code, list clients
// with their scopes, revoke a client, grant or take back host-ops.
const browserPairUsage = "browser pair [-scope host-ops] [-ttl 10m] | clients | revoke CLIENT | grant CLIENT host-ops | revoke-scope CLIENT host-ops"

func runBrowserPairing(ctx context.Context, c *client, sub string, args []string) (bool, error) {
	switch sub {
	case "pair":
		fs := newFlags("browser pair")
		scope := fs.String("scope", "", "extra scope for the client that redeems the code: host-ops")
		ttl := fs.String("ttl", "", "how long the code stays valid (default 10m)")
		if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
			return true, usageError(flagHint(fs, err) + "usage: svcctl browser pair [-scope host-ops] [-ttl 10m]\nexample: svcctl browser pair -ttl 5m   # then type the code into the extension's options page")
		}
		body := map[string]any{}
		if *scope != "" {
			body["scopes"] = strings.Split(*scope, ",")
		}
		if *ttl != "" {
			body["ttl"] = *ttl
		}
		_, err := c.call(ctx, http.MethodPost, "/v1/browser/pairings", body, true)
		return true, err
	case "clients":
		_, err := c.call(ctx, http.MethodGet, "/v1/browser/clients", nil, false)
		return true, err
	case "revoke":
		if len(args) != 1 {
			return true, usageError("usage: svcctl browser revoke CLIENT")
		}
		_, err := c.call(ctx, http.MethodPost, "/v1/browser/clients/"+url.PathEscape(args[0])+"/revoke", nil, true)
		return true, err
	case "grant", "revoke-scope":
		if len(args) != 2 {
			return true, usageError("usage: svcctl browser " + sub + " CLIENT host-ops")
		}
		body := map[string]any{"scope": args[1], "grant": sub == "grant"}
		_, err := c.call(ctx, http.MethodPost, "/v1/browser/clients/"+url.PathEscape(args[0])+"/scopes", body, true)
		return true, err
	}
	return false, nil
}
