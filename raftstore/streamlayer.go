package raftstore

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// authStreamLayer is raft's TCP stream layer with a mutual challenge-response
// handshake before any raft byte: both ends prove they hold the cluster key
// (HMAC-SHA256 over fresh nonces), so a stranger on the raft port can neither
// join nor inject entries, and a node cannot be lured into a stranger's
// cluster. The key itself never crosses the wire.
type authStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	key       []byte
	log       hclog.Logger
}

const (
	handshakeTimeout = 5 * time.Second
	nonceLen         = 32
	handshakeMagic   = "svcd-raft-v1"
)

func newAuthStreamLayer(bind string, advertise net.Addr, key []byte, log hclog.Logger) (*authStreamLayer, error) {
	if len(key) == 0 {
		return nil, errors.New("the raft transport needs a cluster key (cluster_key, or the shared token)")
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if tcp, ok := advertise.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft advertise address %s is not reachable by peers; set raft_advertise", advertise)
	}
	return &authStreamLayer{ln: ln, advertise: advertise, key: key, log: log}, nil
}

// Accept returns the next connection that completed the handshake; failed
// handshakes are logged and dropped without ending the accept loop.
func (s *authStreamLayer) Accept() (net.Conn, error) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return nil, err
		}
		if err := s.serverHandshake(c); err != nil {
			s.log.Warn("raft connection refused: cluster key handshake failed", "remote", c.RemoteAddr().String(), "error", err)
			c.Close()
			continue
		}
		return c, nil
	}
}

func (s *authStreamLayer) Close() error   { return s.ln.Close() }
func (s *authStreamLayer) Addr() net.Addr { return s.advertise }

// Dial connects to a peer and proves the key both ways.
func (s *authStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	if err := clientHandshake(c, s.key); err != nil {
		c.Close()
		return nil, fmt.Errorf("raft handshake with %s: %w", address, err)
	}
	return c, nil
}

// The exchange: client → nc; server → ns, mac(key, "server", nc, ns);
// client checks it → mac(key, "client", ns, nc); server checks it.
func clientHandshake(c net.Conn, key []byte) error {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetDeadline(time.Time{})
	nc, err := nonce()
	if err != nil {
		return err
	}
	if _, err := c.Write(nc); err != nil {
		return err
	}
	buf := make([]byte, nonceLen+sha256.Size)
	if _, err := io.ReadFull(c, buf); err != nil {
		return errors.New("the peer did not answer the handshake (not a svcd node, or a different cluster key)")
	}
	ns, proof := buf[:nonceLen], buf[nonceLen:]
	if !hmac.Equal(proof, mac(key, "server", nc, ns)) {
		return errors.New("the peer does not hold this cluster's key")
	}
	_, err = c.Write(mac(key, "client", ns, nc))
	return err
}

func (s *authStreamLayer) serverHandshake(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetDeadline(time.Time{})
	nc := make([]byte, nonceLen)
	if _, err := io.ReadFull(c, nc); err != nil {
		return err
	}
	ns, err := nonce()
	if err != nil {
		return err
	}
	if _, err := c.Write(append(ns, mac(s.key, "server", nc, ns)...)); err != nil {
		return err
	}
	proof := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, proof); err != nil {
		return err
	}
	if !hmac.Equal(proof, mac(s.key, "client", ns, nc)) {
		return errors.New("wrong cluster key")
	}
	return nil
}

func nonce() ([]byte, error) {
	b := make([]byte, nonceLen)
	_, err := rand.Read(b)
	return b, err
}

func mac(key []byte, role string, a, b []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(handshakeMagic))
	h.Write([]byte(role))
	h.Write(a)
	h.Write(b)
	return h.Sum(nil)
}
