package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// forwardTransport is the round tripper of forwarded calls under cluster
// TLS: the request still names the leader's API address (its Host header
// passes the leader's guard as before), but the connection goes to the raft
// address of the member with that API address, through DialForward —
// mutual TLS and the cluster-key challenge, so neither the call nor the
// caller's token crosses the network in clear. Connections are kept and
// reused like any HTTP keep-alive. Nil without DialForward.
func (c *Cluster) forwardTransport() http.RoundTripper {
	if c.opts.DialForward == nil {
		return nil
	}
	return &http.Transport{
		DialContext: func(ctx context.Context, _, apiAddr string) (net.Conn, error) {
			raftAddr, err := c.raftAddrOf(apiAddr)
			if err != nil {
				return nil, err
			}
			return c.opts.DialForward(ctx, raftAddr)
		},
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		// The body is already TLS on the wire; no second layer.
		DisableCompression: true,
	}
}

// raftAddrOf is the raft address of the member whose API is apiAddr: the
// member records first, raft's leader address when the leader record names
// apiAddr and its member record is not there yet.
func (c *Cluster) raftAddrOf(apiAddr string) (string, error) {
	var raftAddr, leaderID string
	c.opts.Node.Read(func(s *raftstore.State) {
		for _, m := range s.Cluster.Members {
			if m.APIAddr == apiAddr && m.RaftAddr != "" {
				raftAddr = m.RaftAddr
			}
		}
		if s.Cluster.Leader.APIAddr == apiAddr {
			leaderID = s.Cluster.Leader.NodeID
		}
	})
	if raftAddr != "" {
		return raftAddr, nil
	}
	if id, addr := c.opts.Node.Leader(); id != "" && id == leaderID && addr != "" {
		return addr, nil
	}
	return "", fmt.Errorf("no member with API address %s has a known raft address", apiAddr)
}

// joinTransport carries the join call under cluster TLS: the join
// addresses are then the members' raft addresses, and the call (with the
// shared token) goes over the forward channel of that raft port — mutual
// TLS and the cluster-key challenge — instead of plain HTTP to an API. Nil
// without DialForward.
func (c *Cluster) joinTransport() http.RoundTripper {
	if c.opts.DialForward == nil {
		return nil
	}
	return &http.Transport{
		DialContext: func(ctx context.Context, _, raftAddr string) (net.Conn, error) {
			return c.opts.DialForward(ctx, raftAddr)
		},
		DisableKeepAlives:  true, // one call per join attempt
		DisableCompression: true,
	}
}
