package clustertls

import (
	"net"
	"strings"
	"testing"
)

// FuzzParseSANs: any -san value either parses into names a certificate can
// carry (every DNS SAN is a valid name, every IP an IP) or is refused with
// an error; never a panic, never an empty name.
func FuzzParseSANs(f *testing.F) {
	for _, s := range []string{"", "127.0.0.1", "n1.example,10.0.0.1,::1", "*.svcd.internal", " a , ,b ", "-bad", "a..b", "x_y", "1.2.3.4.5", strings.Repeat("a", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSANs(in)
		if err != nil {
			if len(s.DNS)+len(s.IPs) != 0 {
				t.Fatalf("error %v with names %v", err, s)
			}
			return
		}
		for _, d := range s.DNS {
			if d == "" || net.ParseIP(d) != nil || checkDNSName(d) != nil {
				t.Fatalf("DNS SAN %q from %q", d, in)
			}
		}
		for _, ip := range s.IPs {
			if ip == nil {
				t.Fatalf("nil IP from %q", in)
			}
		}
	})
}

// FuzzParseCerts: whatever a tls_ca_file or tls_cert_file holds, the
// parser returns at least one certificate or an error, never both, never
// a panic, and its error never repeats the input (it may be a key).
func FuzzParseCerts(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN EC PRIVATE KEY-----\nc2VjcmV0\n-----END EC PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		certs, err := parseCerts(in)
		if (err == nil) == (len(certs) == 0) {
			t.Fatalf("certs %d, err %v", len(certs), err)
		}
		if err != nil && len(in) > 16 && strings.Contains(err.Error(), string(in)) {
			t.Fatalf("the error repeats the input: %v", err)
		}
	})
}
