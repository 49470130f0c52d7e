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

	"github.com/hashicorp/raft"
)

// The raft port is reachable by anything on the network, so every raft
// connection opens with a mutual HMAC challenge-response over the cluster key:
// each side sends a fresh nonce and answers the other's with
// HMAC-SHA256(key, label || its nonce || peer nonce). A peer that does not
// know the key sees its connection closed before a single raft byte is read,
// so it can neither join (AddVoter arrives over the API, and the leader's
// replication to an unauthenticated address fails) nor inject RPCs.
const (
	authMagic    = "svcd-raft-auth/1"
	nonceSize    = 32
	handshakeTTL = 5 * time.Second
)

// ErrRaftAuth is a failed raft handshake: the peer does not know the cluster key.
var ErrRaftAuth = errors.New("raft peer failed the cluster-key handshake")

// authLayer is a raft.StreamLayer over TCP whose connections are
// authenticated in both directions before raft sees them.
type authLayer struct {
	ln        net.Listener
	advertise net.Addr
	key       []byte
}

func newAuthLayer(bind string, key []byte) (*authLayer, error) {
	if len(key) == 0 {
		return nil, errors.New("raft cluster key is empty")
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	return &authLayer{ln: ln, advertise: ln.Addr(), key: key}, nil
}

// Accept returns the next inbound connection that passed the handshake;
// strangers are closed and skipped.
func (l *authLayer) Accept() (net.Conn, error) {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return nil, err
		}
		if err := handshake(c, l.key, false); err != nil {
			c.Close()
			continue
		}
		return c, nil
	}
}

func (l *authLayer) Close() error   { return l.ln.Close() }
func (l *authLayer) Addr() net.Addr { return l.advertise }

// Dial connects to a peer and proves the key both ways.
func (l *authLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	if err := handshake(c, l.key, true); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// handshake runs the mutual challenge-response on c. The dialer speaks first;
// both sides send magic+nonce, then the MAC over both nonces in their own
// order, and check the other's MAC in constant time.
func handshake(c net.Conn, key []byte, dialer bool) error {
	if err := c.SetDeadline(time.Now().Add(handshakeTTL)); err != nil {
		return err
	}
	defer c.SetDeadline(time.Time{})

	mine := make([]byte, nonceSize)
	if _, err := rand.Read(mine); err != nil {
		return err
	}
	hello := append([]byte(authMagic), mine...)
	if _, err := c.Write(hello); err != nil {
		return err
	}
	theirHello := make([]byte, len(authMagic)+nonceSize)
	if _, err := io.ReadFull(c, theirHello); err != nil {
		return fmt.Errorf("%w: %v", ErrRaftAuth, err)
	}
	if string(theirHello[:len(authMagic)]) != authMagic {
		return fmt.Errorf("%w: wrong protocol", ErrRaftAuth)
	}
	theirs := theirHello[len(authMagic):]

	role, peerRole := "dialer", "listener"
	if !dialer {
		role, peerRole = peerRole, role
	}
	if _, err := c.Write(authMAC(key, role, mine, theirs)); err != nil {
		return err
	}
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("%w: %v", ErrRaftAuth, err)
	}
	if !hmac.Equal(got, authMAC(key, peerRole, theirs, mine)) {
		return ErrRaftAuth
	}
	return nil
}

// authMAC binds the role so a reflected answer is not a valid one.
func authMAC(key []byte, role string, own, peer []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(authMagic))
	m.Write([]byte(role))
	m.Write(own)
	m.Write(peer)
	return m.Sum(nil)
}

// ClusterKeyFromToken derives the raft handshake key from the shared token, so
// nodes that share the token (as they must, to forward with the caller's
// Authorization) authenticate each other without a second secret. The label
// keeps the derived key useless as a bearer token.
func ClusterKeyFromToken(token string) []byte {
	if token == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("svcd raft cluster key v1"))
	return m.Sum(nil)
}
