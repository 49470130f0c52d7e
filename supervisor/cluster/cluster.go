// Package cluster is the supervisor's side of leader/standby HA: it records
// which node leads (with its API address) when leadership changes, joins a
// new node to an existing cluster through a member's API, and forwards
// stateful calls from a standby to the leader. Consensus itself is
// hashicorp/raft's (raftstore); nothing here decides who leads.
package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
)

// Headers of forwarded calls.
const (
	// ServedByHeader names the node that produced an answer.
	ServedByHeader = "X-Svcd-Served-By"
	// ForwardedByHeader marks a call a standby forwarded; the leader never
	// forwards it again (no second hop, no loops).
	ForwardedByHeader = "X-Svcd-Forwarded-By"
)

// Options build a Cluster.
type Options struct {
	Node         *raftstore.Node
	NodeID       string
	APIAdvertise string // host:port other nodes reach this node's API at
	Kind         string // raftstore.KindNode or KindWitness
	Version      string
	Token        string // sent when joining through a member's API
	Log          hclog.Logger
	// DialForward, when set (cluster TLS), carries forwarded calls over
	// the leader's raft port (mutual TLS) instead of plain HTTP to its API.
	DialForward func(ctx context.Context, raftAddr string) (net.Conn, error)
}

// Cluster is one node's view and duties.
type Cluster struct {
	opts   Options
	client *http.Client
	// forward carries forwarded calls (forward_tls.go); nil: the default.
	forward http.RoundTripper
	// reads asks the leader for read indexes over forward's transport, so
	// under cluster TLS it takes the raft port's channel like a forward.
	reads *http.Client
}

// New returns the cluster side of a node.
func New(o Options) *Cluster {
	if o.Kind == "" {
		o.Kind = raftstore.KindNode
	}
	c := &Cluster{opts: o, client: &http.Client{Timeout: 15 * time.Second}}
	c.forward = c.forwardTransport()
	c.reads = &http.Client{Timeout: 15 * time.Second, Transport: c.forward}
	if t := c.joinTransport(); t != nil {
		c.client.Transport = t
	}
	return c
}

// Self is this node's member record.
func (c *Cluster) Self() raftstore.ClusterMember {
	return raftstore.ClusterMember{NodeID: c.opts.NodeID, APIAddr: c.opts.APIAdvertise, RaftAddr: c.opts.Node.RaftAddr(), Kind: c.opts.Kind, Version: c.opts.Version}
}

// Watch follows leadership until ctx ends. On becoming leader it records
// itself as leader (with its API address, so standbys can forward) and
// refreshes its member record; onChange runs on every change (leader-only
// work starts and stops there).
func (c *Cluster) Watch(ctx context.Context, onChange func(leader bool)) {
	ch := c.opts.Node.LeaderChanges()
	announce := func() {
		for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			// The cluster's id first: a new cluster, or a data dir from
			// before the id was replicated, gets it from its first leader.
			_, err := c.opts.Node.EnsureClusterID(actx)
			if err == nil {
				_, err = c.opts.Node.Apply(actx, raftstore.CmdClusterLeader, raftstore.ClusterLeader{NodeID: c.opts.NodeID, APIAddr: c.opts.APIAdvertise, Term: c.opts.Node.Term()})
			}
			if err == nil {
				_, err = c.opts.Node.Apply(actx, raftstore.CmdClusterMember, c.Self())
			}
			cancel()
			if err == nil || errors.Is(err, raftstore.ErrNotLeader) {
				return
			}
			c.opts.Log.Warn("could not record leadership", "error", err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	if c.opts.Node.IsLeader() {
		announce()
		if onChange != nil {
			onChange(true)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case leader := <-ch:
			c.opts.Log.Info("leadership changed", "leader", leader, "node_id", c.opts.NodeID)
			if leader {
				announce()
			}
			if onChange != nil {
				onChange(leader)
			}
		}
	}
}

// LeaderAPI is the current leader's id and API address, when this node
// knows both (the FSM's leader record must name raft's current leader).
func (c *Cluster) LeaderAPI() (id, apiAddr string, ok bool) {
	raftLeader, _ := c.opts.Node.Leader()
	if raftLeader == "" {
		return "", "", false
	}
	var rec raftstore.ClusterLeader
	members := map[string]string{}
	c.opts.Node.Read(func(s *raftstore.State) {
		rec = s.Cluster.Leader
		for id, m := range s.Cluster.Members {
			members[id] = m.APIAddr
		}
	})
	if rec.NodeID == raftLeader && rec.APIAddr != "" {
		return raftLeader, rec.APIAddr, true
	}
	if a := members[raftLeader]; a != "" {
		return raftLeader, a, true
	}
	return raftLeader, "", false
}

// JoinRequest is the body of POST /v1/cluster/join.
type JoinRequest struct {
	NodeID   string `json:"node_id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"`
	Kind     string `json:"kind"`
	Version  string `json:"version"`
}

// Join asks the members at addrs (API host:port; with cluster TLS their
// raft host:port, see joinTransport) to add this node, trying each in turn
// until one succeeds or ctx ends. A standby that gets the call forwards it
// to the leader.
func (c *Cluster) Join(ctx context.Context, addrs []string) error {
	me := c.Self()
	body, _ := json.Marshal(JoinRequest{NodeID: me.NodeID, RaftAddr: me.RaftAddr, APIAddr: me.APIAddr, Kind: me.Kind, Version: me.Version})
	wait := 100 * time.Millisecond
	var last error
	for {
		for _, a := range addrs {
			err := c.joinOnce(ctx, a, body)
			if err == nil {
				c.opts.Log.Info("joined the cluster", "through", a, "node_id", me.NodeID)
				return nil
			}
			last = err
			var notTLS tls.RecordHeaderError
			if c.opts.DialForward != nil && errors.As(err, &notTLS) {
				err = fmt.Errorf("%w (with cluster TLS, join lists the members' raft addresses, not their API addresses)", err)
			}
			c.opts.Log.Warn("join attempt failed; retrying", "through", a, "error", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("could not join through %v: %w (last error: %v)", addrs, ctx.Err(), last)
		case <-time.After(wait):
		}
		wait = min(wait*2, 2*time.Second)
	}
}

func (c *Cluster) joinOnce(ctx context.Context, addr string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/cluster/join", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s: %s", addr, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}
