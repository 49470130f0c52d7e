package harness

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FreePortOn is a free port on a loopback address (127.0.0.2 …, for tests
// of several nodes on one host), for a daemon to bind later.
//
// It is taken below the kernel's ephemeral range. A port is free only while
// the harness looks; until the daemon binds it, any outgoing connection on
// the machine may take an ephemeral port as its source port, and with two
// `make test` runs side by side one did ("raft listen on 127.0.0.2:39577:
// address already in use", a node of an HA test that then never started).
// Ports below the range are never handed out that way: only another
// picker's random draw can meet one.
func FreePortOn(t testing.TB, host string) string {
	t.Helper()
	lo := ephemeralLow()
	const floor = 10000
	for i := 0; lo-floor > 1000 && i < 100; i++ {
		addr := net.JoinHostPort(host, strconv.Itoa(floor+rand.IntN(lo-floor)))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	// A host whose ephemeral range starts low: any free port.
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read).
var ephemeralLow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1024 {
		return 32768
	}
	return n
})
