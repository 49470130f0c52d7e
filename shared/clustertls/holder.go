// Package clustertls is the mutual TLS between svcd nodes (docs/ha.md, TLS):
// a holder of this node's certificate, key and the cluster CA that the TLS
// configs consult on every handshake, so Reload (SIGHUP) takes effect for
// the next connection without a restart; the checks that refuse bad files
// at start with a clear error; and the creation of a CA and node
// certificates (svcd tls ca create / svcd tls cert create).
package clustertls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Files names the PEM files of one node.
type Files struct {
	CA   string // the cluster CA certificate (tls_ca_file)
	Cert string // this node's certificate (tls_cert_file)
	Key  string // this node's private key (tls_key_file)
}

// material is one consistent load of Files.
type material struct {
	cert   tls.Certificate
	leaf   *x509.Certificate
	pool   *x509.CertPool
	loaded time.Time
}

// Holder serves the current material to TLS handshakes.
type Holder struct {
	files Files
	now   func() time.Time
	mu    sync.RWMutex
	cur   *material
}

// Load reads and checks files (see check): a holder exists only for files
// a node could run with.
func Load(files Files) (*Holder, error) {
	h := &Holder{files: files, now: time.Now}
	m, err := load(files, h.now())
	if err != nil {
		return nil, err
	}
	h.cur = m
	return h, nil
}

// Reload re-reads the files. New material replaces the old only when it
// passes every start-up check; otherwise the node keeps what it has and
// the error says why. It returns a description of what was loaded (for
// the log: subject, expiry; never key material).
func (h *Holder) Reload() (string, error) {
	m, err := load(h.files, h.now())
	if err != nil {
		return "", fmt.Errorf("cluster TLS reload refused, keeping the current certificate: %w", err)
	}
	h.mu.Lock()
	h.cur = m
	h.mu.Unlock()
	return h.Describe(), nil
}

// Describe names the current certificate: subject, SANs and expiry.
func (h *Holder) Describe() string {
	m := h.current()
	return fmt.Sprintf("cluster TLS certificate %q (SANs %v %v, expires %s) from %s, CA %s", m.leaf.Subject.CommonName,
		m.leaf.DNSNames, m.leaf.IPAddresses, m.leaf.NotAfter.UTC().Format(time.RFC3339), h.files.Cert, h.files.CA)
}

func (h *Holder) current() *material {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.cur
}

// ServerConfig is the listening side: it demands a client certificate
// signed by the cluster CA.
func (h *Holder) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Requested, not required: a peer without one then reaches
		// VerifyPeerCertificate and is refused there as no_certificate
		// (the stdlib's own refusal would not say why in a typed error).
		ClientAuth: tls.RequestClientCert,
		// A resumed session skips VerifyPeerCertificate: after a reload
		// that drops a CA, a ticket issued before it must not let its
		// holder back in. Raft keeps long connections; resumption buys
		// nothing here.
		SessionTicketsDisabled: true,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c := h.current().cert
			return &c, nil
		},
		// Verification is ours, against the CA of the moment (a reload
		// may have replaced it): the stdlib would pin the pool at config time.
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return h.verify(raw, "")
		},
	}
}

// ClientConfig is the dialing side towards addr (host:port): the server's
// certificate must be signed by the cluster CA and name addr's host (an IP
// SAN or a DNS SAN).
func (h *Holder) ClientConfig(addr string) *tls.Config {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The stdlib check is replaced, not skipped: VerifyPeerCertificate
		// below does chain and name verification against the current CA.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyPeerCertificate
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c := h.current().cert
			return &c, nil
		},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return h.verify(raw, host)
		},
	}
}

// PeerError is a refused peer certificate; Reason is a metric label.
type PeerError struct {
	Reason string // no_certificate, untrusted_certificate, expired_certificate, wrong_name
	Err    error
}

func (e *PeerError) Error() string { return e.Err.Error() }
func (e *PeerError) Unwrap() error { return e.Err }

// verify checks a peer's chain against the current CA; name, when set,
// must be one of the leaf's SANs.
func (h *Holder) verify(raw [][]byte, name string) error {
	if len(raw) == 0 {
		return &PeerError{"no_certificate", errors.New("the peer sent no certificate")}
	}
	certs := make([]*x509.Certificate, 0, len(raw))
	for _, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return &PeerError{"untrusted_certificate", fmt.Errorf("the peer's certificate does not parse: %w", err)}
		}
		certs = append(certs, c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	now := h.now()
	leaf := certs[0]
	if now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return &PeerError{"expired_certificate", fmt.Errorf("the peer's certificate %q is valid only from %s to %s", leaf.Subject.CommonName,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))}
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: h.current().pool, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return &PeerError{"untrusted_certificate", fmt.Errorf("the peer's certificate %q is not signed by this cluster's CA: %w", leaf.Subject.CommonName, err)}
	}
	if name != "" {
		if err := leaf.VerifyHostname(name); err != nil {
			return &PeerError{"wrong_name", fmt.Errorf("the peer's certificate %q does not name %s: %w", leaf.Subject.CommonName, name, err)}
		}
	}
	return nil
}
