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
