package supervisor

import (
	"net"
	"reflect"
	"strconv"
	"testing"
)

func TestDaemonPorts(t *testing.T) {
	got := daemonPorts("127.0.0.1:4317", "inmem", "", "[::1]:7000", "127.0.0.1:4317", "host:0", "host:99999", "127.0.0.1:4319")
	if want := []uint16{4317, 7000, 4319}; !reflect.DeepEqual(got, want) {
		t.Fatalf("daemonPorts: %v, want %v", got, want)
	}
}

// FuzzDaemonPorts: any listen address yields ports that are in it, each
// once, never 0, and never a panic.
func FuzzDaemonPorts(f *testing.F) {
	for _, s := range []string{"127.0.0.1:4317", "[::1]:80", "inmem", "", ":0", "a:65536", "h:-1", "h:+5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		ports := daemonPorts(addr, addr)
		if len(ports) > 1 {
			t.Fatalf("%q: %v: the same address twice gave two ports", addr, ports)
		}
		for _, p := range ports {
			_, ps, err := net.SplitHostPort(addr)
			n, perr := strconv.ParseUint(ps, 10, 16)
			if p == 0 || err != nil || perr != nil || uint16(n) != p {
				t.Fatalf("%q: port %d not the address's", addr, p)
			}
		}
	})
}
