package clustertls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CA is a cluster CA loaded for signing.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// CreateCA writes a new ECDSA P-256 CA as dir/ca.pem and dir/ca-key.pem
// (0600) and returns their paths. Existing files are never overwritten.
func CreateCA(dir, name string, validFor time.Duration, now time.Time) (certPath, keyPath string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"svcd cluster"}},
		NotBefore:             now.Add(-5 * time.Minute), // small clock skew between hosts
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	certPath, keyPath = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	return certPath, keyPath, writePair(certPath, keyPath, der, key)
}

// LoadCA reads a CA written by CreateCA (or any ECDSA CA in PEM).
func LoadCA(certPath, keyPath string) (*CA, error) {
	cb, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	certs, err := parseCerts(cb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certPath, err)
	}
	if !certs[0].IsCA {
		return nil, fmt.Errorf("%s: %q is not a CA certificate", certPath, certs[0].Subject.CommonName)
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(kb)
	if blk == nil {
		return nil, fmt.Errorf("%s: no PEM block", keyPath)
	}
	key, err := x509.ParseECPrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: want an EC PRIVATE KEY: %w", keyPath, err)
	}
	if !key.PublicKey.Equal(certs[0].PublicKey) {
		return nil, fmt.Errorf("%s is not the key of %s", keyPath, certPath)
	}
	return &CA{Cert: certs[0], Key: key}, nil
}

// CreateCert writes a node certificate signed by ca for name with the
// given SANs as dir/<name>.pem and dir/<name>-key.pem (0600). A node
// certificate serves both ends of a connection (server and client auth).
func (ca *CA) CreateCert(dir, name string, sans SANs, validFor time.Duration, now time.Time) (certPath, keyPath string, err error) {
	if err := checkName(name); err != nil {
		return "", "", err
	}
	if len(sans.DNS) == 0 && len(sans.IPs) == 0 {
		return "", "", errors.New("a node certificate needs at least one SAN: the DNS names or IPs its peers dial")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	notAfter := now.Add(validFor)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"svcd cluster"}},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     sans.DNS,
		IPAddresses:  sans.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return "", "", err
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	return certPath, keyPath, writePair(certPath, keyPath, der, key)
}

// SANs are a certificate's subject alternative names.
type SANs struct {
	DNS []string
	IPs []net.IP
}

// ParseSANs reads a comma separated list of DNS names and IP addresses
// ("n1.example,10.0.0.1,::1"). An IP is an IP SAN; anything else must be a
// DNS name (letters, digits, '-', '.', an optional leading "*."). Empty
// items are skipped; duplicates are kept once.
func ParseSANs(list string) (SANs, error) {
	var s SANs
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" || seen[item] {
			continue
		}
		seen[item] = true
		if ip := net.ParseIP(item); ip != nil {
			s.IPs = append(s.IPs, ip)
			continue
		}
		if err := checkDNSName(item); err != nil {
			return SANs{}, err
		}
		s.DNS = append(s.DNS, strings.ToLower(item))
	}
	return s, nil
}

func checkDNSName(n string) error {
	name := strings.TrimPrefix(n, "*.")
	if len(n) > 253 || name == "" {
		return fmt.Errorf("SAN %q: not an IP address or a DNS name", n)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("SAN %q: not an IP address or a DNS name (label %q)", n, label)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("SAN %q: not an IP address or a DNS name (character %q)", n, r)
			}
		}
	}
	return nil
}

// checkName keeps a node name usable as a file name.
func checkName(name string) error {
	if name == "" || len(name) > 64 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" || strings.HasPrefix(name, ".") {
		return fmt.Errorf("certificate name %q: want letters, digits, '-', '_' or '.' (it names the files)", name)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// writePair writes the certificate (0644) and the key (0600), refusing to
// overwrite either: a CA replaced by mistake would strand every node.
func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeNew(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return err
	}
	if err := writeNew(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		os.Remove(keyPath)
		return err
	}
	return nil
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists; not overwritten (move it away first)", path)
		}
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
