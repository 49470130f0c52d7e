package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"syscall"

	"github.com/svcd/svcd/raftstore"
)

// GetMember asks node nodeID's API for path (a read: GET /health) the way
// a forward goes: plain HTTP to its API address, or through its raft port
// under cluster TLS. gone says nothing can answer there any more: the node
// is not a member (or has no API: a witness), or its address refused the
// connection (no process listens). An error without gone is a node that
// did not answer: stopped, cut off or slow, perhaps alive.
func (c *Cluster) GetMember(ctx context.Context, nodeID, path string) (body []byte, gone bool, err error) {
	var addr string
	c.opts.Node.Read(func(s *raftstore.State) {
		if m := s.Cluster.Members[nodeID]; m != nil && m.Kind == raftstore.KindNode {
			addr = m.APIAddr
		}
	})
	if addr == "" {
		return nil, true, fmt.Errorf("%s is not a member node of this cluster", nodeID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Scheme: "http", Host: addr, Path: path}).String(), nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set(ForwardedByHeader, c.opts.NodeID)
	resp, err := c.reads.Do(req)
	if err != nil {
		return nil, errors.Is(err, syscall.ECONNREFUSED), err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, false, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("%s answered %s for %s", nodeID, resp.Status, path)
	}
	return body, false, nil
}
