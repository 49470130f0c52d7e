package clustertls

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"
)

// load reads files and refuses, with an error naming the file and the
// setting, what a node cannot run with: a missing or unreadable file, a key
// that does not match the certificate, a certificate the CA did not sign,
// a certificate or CA outside its validity period.
func load(f Files, now time.Time) (*material, error) {
	for _, p := range []struct{ setting, path string }{{"tls_ca_file", f.CA}, {"tls_cert_file", f.Cert}, {"tls_key_file", f.Key}} {
		if p.path == "" {
			return nil, fmt.Errorf("%s is not set: cluster TLS needs tls_ca_file, tls_cert_file and tls_key_file", p.setting)
		}
		if _, err := os.Stat(p.path); err != nil {
			return nil, fmt.Errorf("%s %s: %w", p.setting, p.path, err)
		}
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("tls_ca_file %s: %w", f.CA, err)
	}
	cas, err := parseCerts(caPEM)
	if err != nil {
		return nil, fmt.Errorf("tls_ca_file %s: %w", f.CA, err)
	}
	pool := x509.NewCertPool()
	for _, ca := range cas {
		if !ca.IsCA {
			return nil, fmt.Errorf("tls_ca_file %s: %q is not a CA certificate", f.CA, ca.Subject.CommonName)
		}
		if err := inPeriod(ca, now); err != nil {
			return nil, fmt.Errorf("tls_ca_file %s: %w", f.CA, err)
		}
		pool.AddCert(ca)
	}
	// X509KeyPair reads both files' PEM; its error does not name them.
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("tls_cert_file %s: %w", f.Cert, err)
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return nil, fmt.Errorf("tls_key_file %s: %w", f.Key, err)
	}
	if _, err := parseCerts(certPEM); err != nil {
		return nil, fmt.Errorf("tls_cert_file %s: %w", f.Cert, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// Never echo the key: the error is the stdlib's, about its form.
		return nil, fmt.Errorf("tls_key_file %s does not go with tls_cert_file %s: %w", f.Key, f.Cert, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls_cert_file %s: %w", f.Cert, err)
		}
	}
	if err := inPeriod(leaf, now); err != nil {
		return nil, fmt.Errorf("tls_cert_file %s: %w", f.Cert, err)
	}
	inter := x509.NewCertPool()
	for _, raw := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(raw); err == nil {
			inter.AddCert(c)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("tls_cert_file %s is not signed by the CA in tls_ca_file %s: %w", f.Cert, f.CA, err)
	}
	return &material{cert: pair, leaf: leaf, pool: pool, loaded: now}, nil
}

// parseCerts is every CERTIFICATE block of a PEM file; anything else there
// (a key pasted by mistake) is refused without being echoed.
func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a %q PEM block where certificates were expected", blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return out, nil
}

func inPeriod(c *x509.Certificate, now time.Time) error {
	switch {
	case now.After(c.NotAfter):
		return fmt.Errorf("certificate %q expired at %s", c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(c.NotBefore):
		return fmt.Errorf("certificate %q is not valid before %s", c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}
