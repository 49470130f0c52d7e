package raftstore

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Forwarded API calls between nodes (docs/ha.md, TLS). With cluster TLS a
// standby does not call the leader's public API listener in plain HTTP: it
// dials the leader's raft port, passes the same mutual TLS and cluster-key
// challenge as raft, and asks for the forward channel; the leader serves
// its API handler on ForwardListener.

// ClusterTLS reports whether this node's raft transport runs over mutual TLS.
func (n *Node) ClusterTLS() bool { return n.stream != nil && n.stream.tlsHolder != nil }

// ForwardListener yields the forwarded-call connections other nodes open on
// this node's raft port; nil without cluster TLS (plain nodes forward over
// the public API listener, as before).
func (n *Node) ForwardListener() net.Listener {
	if !n.ClusterTLS() {
		return nil
	}
	return &forwardListener{s: n.stream, closed: make(chan struct{})}
}

// DialForward opens a forward-channel connection to the node whose raft
// address is raftAddr.
func (n *Node) DialForward(ctx context.Context, raftAddr string) (net.Conn, error) {
	if !n.ClusterTLS() {
		return nil, errors.New("forwarding over the raft port needs cluster TLS")
	}
	timeout := handshakeTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	return n.stream.dial(raftAddr, timeout, channelForward)
}

// ProbePeer checks, before a joining node becomes a voter, that raftAddr
// answers with a certificate of this cluster's CA naming that address and
// holds the cluster key, and accepts this node's certificate: a node that
// could never exchange a raft byte is refused at join instead of becoming
// a voter nobody can reach. Without cluster TLS it does nothing.
func (n *Node) ProbePeer(ctx context.Context, raftAddr string) error {
	if !n.ClusterTLS() {
		return nil
	}
	timeout := handshakeTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	c, err := n.stream.dial(raftAddr, timeout, channelProbe)
	if err != nil {
		return err
	}
	return c.Close()
}

// ConnectionsRefused counts cluster connections refused, by reason
// (RefusalReasons): inbound ones this node's listener turned away and
// outbound ones whose peer failed this node's checks.
func (n *Node) ConnectionsRefused() map[string]uint64 { return n.refused.snapshot() }

// forwardListener is the forward channel as a net.Listener. Closing it does
// not close the raft port (the transport owns that).
type forwardListener struct {
	s      *authStreamLayer
	once   sync.Once
	closed chan struct{}
}

func (l *forwardListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.s.forwardConns:
		return c, nil
	case <-l.s.done:
		return nil, net.ErrClosed
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *forwardListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *forwardListener) Addr() net.Addr { return l.s.advertise }
