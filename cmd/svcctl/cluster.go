package main

import (
	"context"
	"net/http"
)

// runCluster lists the cluster's members, or asks the cluster (through the
// daemon at -addr, which forwards to the leader) to add or remove one.
func runCluster(ctx context.Context, c *client, args []string) error {
	switch {
	case len(args) == 0 || (len(args) == 1 && args[0] == "ls"):
		_, err := c.call(ctx, http.MethodGet, "/v1/cluster", nil, false)
		return err
	case args[0] == "join" && (len(args) == 4 || len(args) == 5):
		body := map[string]string{"node_id": args[1], "raft_addr": args[2], "api_addr": args[3], "kind": "node"}
		if len(args) == 5 {
			body["kind"] = args[4]
		}
		if body["api_addr"] == "-" {
			body["api_addr"], body["kind"] = "", "witness"
		}
		_, err := c.call(ctx, http.MethodPost, "/v1/cluster/join", body, true)
		return err
	case args[0] == "remove" && len(args) == 2:
		_, err := c.call(ctx, http.MethodPost, "/v1/cluster/remove", map[string]string{"node_id": args[1]}, true)
		return err
	}
	return usageError("usage: svcctl cluster [ls] | svcctl cluster join NODE_ID RAFT_ADDR API_ADDR|- [node|witness] | svcctl cluster remove NODE_ID")
}
