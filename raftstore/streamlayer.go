package raftstore

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/svcd/svcd/shared/clustertls"
)

// authStreamLayer is raft's TCP stream layer with a mutual challenge-response
// handshake before any raft byte: both ends prove they hold the cluster key
// (HMAC-SHA256 over fresh nonces), so a stranger on the raft port can neither
// join nor inject entries, and a node cannot be lured into a stranger's
// cluster. The key itself never crosses the wire.
//
// With cluster TLS (tlsHolder set) every connection is mutual TLS first:
// a peer without a certificate of the cluster CA is refused in the TLS
// handshake, before the challenge and before any raft byte. The challenge
// then runs inside TLS, and one channel byte says what the connection is
// for: raft, or an API call one node forwards to another (forwardConns),
// so forwarded calls and the caller's token travel encrypted on the same
// port. Plain TCP (no holder) keeps the pre-TLS wire format unchanged.
type authStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	key       []byte
	log       hclog.Logger
	tlsHolder *clustertls.Holder
	refused   *refusals

	raftConns    chan net.Conn
	forwardConns chan net.Conn
	done         chan struct{}
	closeOnce    sync.Once
}

const (
	handshakeTimeout = 5 * time.Second
	nonceLen         = 32
	handshakeMagic   = "svcd-raft-v1"
)

// Channel bytes (TLS mode only), sent by the dialer after the challenge.
const (
	channelRaft    byte = 'r'
	channelForward byte = 'f'
	// channelProbe checks a peer's certificate and key, then hangs up: the
	// leader probes a joining node before adding it as a voter.
	channelProbe byte = 'p'
)

func newAuthStreamLayer(bind string, advertise net.Addr, key []byte, holder *clustertls.Holder, refused *refusals, log hclog.Logger) (*authStreamLayer, error) {
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
	if refused == nil {
		refused = newRefusals(log)
	}
	s := &authStreamLayer{ln: ln, advertise: advertise, key: key, log: log, tlsHolder: holder, refused: refused,
		raftConns: make(chan net.Conn), forwardConns: make(chan net.Conn), done: make(chan struct{})}
	go s.acceptLoop()
	return s, nil
}

// acceptLoop handshakes each connection on its own goroutine: a slow or
// hostile peer holds up only itself, never the next node's connection.
func (s *authStreamLayer) acceptLoop() {
	backoff := 5 * time.Millisecond
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (EMFILE under load): wait and go on, as
			// net/http does; raft must not lose its listener over it.
			s.log.Warn("raft accept failed; retrying", "error", err, "backoff", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		go s.admit(c)
	}
}

func (s *authStreamLayer) admit(c net.Conn) {
	conn, ch, err := s.serverHandshake(c)
	if err != nil {
		s.refused.record(c.RemoteAddr(), err)
		c.Close()
		return
	}
	dst := s.raftConns
	switch ch {
	case channelForward:
		dst = s.forwardConns
	case channelProbe:
		conn.Close()
		return
	}
	// Nobody may take a forward connection (a witness serves no API):
	// it is dropped after the handshake timeout instead of waiting forever.
	t := time.NewTimer(handshakeTimeout)
	defer t.Stop()
	select {
	case dst <- conn:
	case <-s.done:
		conn.Close()
	case <-t.C:
		conn.Close()
	}
}

// Accept returns the next raft connection that completed the handshake.
func (s *authStreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.raftConns:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

func (s *authStreamLayer) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		err = s.ln.Close()
	})
	return err
}

func (s *authStreamLayer) Addr() net.Addr { return s.advertise }

// Dial connects to a peer's raft channel and proves the key both ways.
func (s *authStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dial(string(address), timeout, channelRaft)
}

func (s *authStreamLayer) dial(address string, timeout time.Duration, ch byte) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", address, timeout)
	if err != nil {
		return nil, err
	}
	conn, err := s.clientHandshake(c, address, ch)
	if err != nil {
		c.Close()
		s.refused.count(reasonOf(err))
		return nil, fmt.Errorf("raft handshake with %s: %w", address, err)
	}
	return conn, nil
}

func (s *authStreamLayer) clientHandshake(c net.Conn, address string, ch byte) (net.Conn, error) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetDeadline(time.Time{})
	if s.tlsHolder == nil {
		return c, clientHandshake(c, s.key)
	}
	tc := tls.Client(c, s.tlsHolder.ClientConfig(address))
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	if err := clientHandshake(tc, s.key); err != nil {
		return nil, err
	}
	if _, err := tc.Write([]byte{ch}); err != nil {
		return nil, err
	}
	return tc, nil
}

// The exchange: client → nc; server → ns, mac(key, "server", nc, ns);
// client checks it → mac(key, "client", ns, nc); server checks it.
func clientHandshake(c net.Conn, key []byte) error {
	nc, err := nonce()
	if err != nil {
		return err
	}
	if _, err := c.Write(nc); err != nil {
		return err
	}
	buf := make([]byte, nonceLen+sha256.Size)
	if _, err := io.ReadFull(c, buf); err != nil {
		var pe *clustertls.PeerError
		if errors.As(err, &pe) {
			return err
		}
		// In TLS 1.3 the server judges our certificate after our side of
		// the handshake is done: its refusal arrives here, as an alert.
		if remoteAlert(err) {
			return &refusedError{reason: "refused_by_peer", err: fmt.Errorf("the peer refused this node's certificate (%v)", err)}
		}
		return errors.New("the peer did not answer the handshake (not a svcd node, or a different cluster key)")
	}
	ns, proof := buf[:nonceLen], buf[nonceLen:]
	if !hmac.Equal(proof, mac(key, "server", nc, ns)) {
		return &refusedError{reason: "cluster_key", err: errors.New("the peer does not hold this cluster's key")}
	}
	_, err = c.Write(mac(key, "client", ns, nc))
	return err
}

// serverHandshake admits a connection: TLS (when on), then the challenge,
// then (TLS) the channel byte. It returns the connection raft or the
// forward listener reads from.
func (s *authStreamLayer) serverHandshake(c net.Conn) (net.Conn, byte, error) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetDeadline(time.Time{})
	if s.tlsHolder == nil {
		return c, channelRaft, keyHandshake(c, s.key)
	}
	tc := tls.Server(c, s.tlsHolder.ServerConfig())
	if err := tc.Handshake(); err != nil {
		if reasonOf(err) == "other" {
			err = fmt.Errorf("%w: %v", errTLSHandshake, err)
		}
		return nil, 0, err
	}
	if err := keyHandshake(tc, s.key); err != nil {
		return nil, 0, err
	}
	var ch [1]byte
	if _, err := io.ReadFull(tc, ch[:]); err != nil {
		return nil, 0, err
	}
	if ch[0] != channelRaft && ch[0] != channelForward && ch[0] != channelProbe {
		return nil, 0, &refusedError{reason: "protocol", err: fmt.Errorf("unknown channel %q", ch[0])}
	}
	return tc, ch[0], nil
}

func keyHandshake(c net.Conn, key []byte) error {
	nc := make([]byte, nonceLen)
	if _, err := io.ReadFull(c, nc); err != nil {
		return err
	}
	ns, err := nonce()
	if err != nil {
		return err
	}
	if _, err := c.Write(append(ns, mac(key, "server", nc, ns)...)); err != nil {
		return err
	}
	proof := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, proof); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// The client hangs up when our proof does not check out.
			return &refusedError{reason: "cluster_key", err: fmt.Errorf("the peer hung up after the challenge: it holds another cluster key (%v)", err)}
		}
		return err
	}
	if !hmac.Equal(proof, mac(key, "client", ns, nc)) {
		return &refusedError{reason: "cluster_key", err: errors.New("wrong cluster key")}
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
