package raftstore

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/svcd/svcd/shared/clustertls"
)

// testCA is a cluster CA in a temp dir, for issuing node certificates.
type testCA struct {
	dir    string
	caPath string
	ca     *clustertls.CA
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	dir := t.TempDir()
	cp, kp, err := clustertls.CreateCA(dir, name, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := clustertls.LoadCA(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{dir: dir, caPath: cp, ca: ca}
}

// issue writes a node certificate for sans, valid from now for validFor.
func (c *testCA) issue(t *testing.T, name, sans string, now time.Time, validFor time.Duration) clustertls.Files {
	t.Helper()
	s, err := clustertls.ParseSANs(sans)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp, err := c.ca.CreateCert(c.dir, name, s, validFor, now)
	if err != nil {
		t.Fatal(err)
	}
	return clustertls.Files{CA: c.caPath, Cert: cp, Key: kp}
}

func (c *testCA) holder(t *testing.T, name, sans string) *clustertls.Holder {
	t.Helper()
	h, err := clustertls.Load(c.issue(t, name, sans, time.Now(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func tlsLayer(t *testing.T, h *clustertls.Holder) *authStreamLayer {
	t.Helper()
	s, err := newAuthStreamLayer("127.0.0.1:0", nil, []byte("the cluster key"), h, nil, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitRefused waits (bounded) until layer s counted a refusal for reason.
func waitRefused(t *testing.T, s *authStreamLayer, reason string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.refused.snapshot()[reason] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal counted as %q; counts %v", reason, s.refused.snapshot())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// acceptNone fails if the layer hands raft a connection.
func acceptNone(t *testing.T, s *authStreamLayer) {
	t.Helper()
	select {
	case c := <-s.raftConns:
		c.Close()
		t.Fatal("a refused peer's connection reached raft")
	default:
	}
}

func TestTLSStreamLayerGoodCertificateCarriesRaftBytes(t *testing.T) {
	ca := newTestCA(t, "cluster A")
	srv := tlsLayer(t, ca.holder(t, "n1", "127.0.0.1"))
	cli := tlsLayer(t, ca.holder(t, "n2", "127.0.0.1"))
	got := make(chan []byte, 1)
	go func() {
		c, err := srv.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b := make([]byte, 5)
		_, _ = io.ReadFull(c, b)
		_, _ = c.Write([]byte("pong!"))
		got <- b
	}()
	c, err := cli.Dial(raft.ServerAddress(srv.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*tls.Conn); !ok {
		t.Fatalf("raft connection is %T, want TLS", c)
	}
	if _, err := c.Write([]byte("ping!")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "pong!" {
		t.Fatalf("answer %q, %v", b, err)
	}
	if s := <-got; !bytes.Equal(s, []byte("ping!")) {
		t.Fatalf("server read %q", s)
	}
}

func TestTLSStreamLayerRefusesAForeignCA(t *testing.T) {
	srv := tlsLayer(t, newTestCA(t, "cluster A").holder(t, "n1", "127.0.0.1"))
	// A node of another CA checks the server first and hangs up; the server
	// counts a peer that refused it.
	foreign := tlsLayer(t, newTestCA(t, "cluster B").holder(t, "x", "127.0.0.1"))
	if _, err := foreign.Dial(raft.ServerAddress(srv.Addr().String()), 5*time.Second); err == nil {
		t.Fatal("a node of another CA connected")
	}
	waitRefused(t, srv, "refused_by_peer")
	if foreign.refused.snapshot()["untrusted_certificate"] == 0 {
		t.Fatalf("the foreign node did not count the untrusted server: %v", foreign.refused.snapshot())
	}
	// A client that skips verifying the server still presents a foreign
	// certificate: the server refuses it in the handshake.
	other := newTestCA(t, "cluster C").issue(t, "y", "127.0.0.1", time.Now(), time.Hour)
	rawTLSClient(t, srv, &other)
	waitRefused(t, srv, "untrusted_certificate")
	acceptNone(t, srv)
}

func TestTLSStreamLayerRefusesNoCertificate(t *testing.T) {
	srv := tlsLayer(t, newTestCA(t, "cluster A").holder(t, "n1", "127.0.0.1"))
	rawTLSClient(t, srv, nil)
	waitRefused(t, srv, "no_certificate")
	// A plain-TCP node (cluster_tls = "off") sends the challenge's nonce.
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := clientHandshake(c, []byte("the cluster key")); err == nil {
		t.Fatal("a plain-TCP node passed the handshake of a TLS node")
	}
	waitRefused(t, srv, "not_tls")
	acceptNone(t, srv)
}

func TestTLSStreamLayerRefusesAnExpiredCertificate(t *testing.T) {
	ca := newTestCA(t, "cluster A")
	srv := tlsLayer(t, ca.holder(t, "n1", "127.0.0.1"))
	expired := ca.issue(t, "old", "127.0.0.1", time.Now().Add(-3*time.Hour), time.Hour)
	if _, err := clustertls.Load(expired); err == nil {
		t.Fatal("Load took an expired certificate")
	}
	rawTLSClient(t, srv, &expired)
	waitRefused(t, srv, "expired_certificate")
	acceptNone(t, srv)
}

func TestTLSStreamLayerRefusesAServerCertificateForAnotherName(t *testing.T) {
	ca := newTestCA(t, "cluster A")
	// The server's certificate names 10.9.9.9 and n1.example, not the
	// 127.0.0.1 the client dials: a stolen peer certificate does not let a
	// host impersonate another address.
	srv := tlsLayer(t, ca.holder(t, "n1", "10.9.9.9,n1.example"))
	cli := tlsLayer(t, ca.holder(t, "n2", "127.0.0.1"))
	_, err := cli.Dial(raft.ServerAddress(srv.Addr().String()), 5*time.Second)
	if err == nil {
		t.Fatal("dialed a server whose certificate does not name its address")
	}
	if cli.refused.snapshot()["wrong_name"] == 0 {
		t.Fatalf("counts %v, error %v", cli.refused.snapshot(), err)
	}
	acceptNone(t, srv)
}

func TestTLSStreamLayerRefusesAWrongClusterKeyInsideTLS(t *testing.T) {
	ca := newTestCA(t, "cluster A")
	srv := tlsLayer(t, ca.holder(t, "n1", "127.0.0.1"))
	cli := tlsLayer(t, ca.holder(t, "n2", "127.0.0.1"))
	cli.key = []byte("another key")
	if _, err := cli.Dial(raft.ServerAddress(srv.Addr().String()), 5*time.Second); err == nil {
		t.Fatal("a node with another cluster key connected")
	}
	waitRefused(t, srv, "cluster_key")
	acceptNone(t, srv)
}

// rawTLSClient connects with files' certificate (nil: none), not checking
// the server, and tries the challenge; the server must refuse it.
func rawTLSClient(t *testing.T, srv *authStreamLayer, files *clustertls.Files) {
	t.Helper()
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13} //nolint:gosec // the test's hostile client
	if files != nil {
		pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	c, err := tls.Dial("tcp", srv.Addr().String(), cfg)
	if err != nil {
		return // refused in the handshake itself
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := clientHandshake(c, []byte("the cluster key")); err == nil {
		t.Fatal("the server took a client it must refuse")
	}
}

// TestTLSStreamLayerReloadTakesANewCAForTheNextConnection: the server's CA
// file gains a second CA and Reload is called; the next handshake trusts a
// node of that CA without a restart (VerifyPeerCertificate consults the
// holder, not a pool fixed at start).
func TestTLSStreamLayerReloadTakesANewCAForTheNextConnection(t *testing.T) {
	a, bca := newTestCA(t, "cluster A"), newTestCA(t, "cluster B")
	caA, err := os.ReadFile(a.caPath)
	if err != nil {
		t.Fatal(err)
	}
	caB, err := os.ReadFile(bca.caPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srvCA, cliCA := filepath.Join(dir, "srv-ca.pem"), filepath.Join(dir, "cli-ca.pem")
	mustWrite(t, srvCA, caA)
	mustWrite(t, cliCA, append(append([]byte{}, caA...), caB...))
	sf := a.issue(t, "n1", "127.0.0.1", time.Now(), time.Hour)
	sf.CA = srvCA
	cf := bca.issue(t, "n2", "127.0.0.1", time.Now(), time.Hour)
	cf.CA = cliCA
	sh, err := clustertls.Load(sf)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := clustertls.Load(cf)
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := tlsLayer(t, sh), tlsLayer(t, ch)
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := cli.Dial(raft.ServerAddress(srv.Addr().String()), 5*time.Second); err == nil {
		t.Fatal("the server trusted cluster B before the reload")
	}
	waitRefused(t, srv, "untrusted_certificate")
	mustWrite(t, srvCA, append(append([]byte{}, caA...), caB...))
	if _, err := sh.Reload(); err != nil {
		t.Fatal(err)
	}
	c, err := cli.Dial(raft.ServerAddress(srv.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("after the reload: %v", err)
	}
	c.Close()
}

func mustWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
