package harness

import (
	"net"
	"strconv"
	"testing"
)

// Ports the harness picks are free and below the ephemeral range, where
// no outgoing connection takes them as its source port.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		addr := FreePortOn(t, "127.0.0.2")
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if lo > 11000 && (port < 10000 || port >= lo) {
			t.Fatalf("port %d is outside [10000, %d)", port, lo)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("picked %s, which cannot be bound: %v", addr, err)
		}
		ln.Close()
		seen[addr] = true
	}
	if len(seen) < 10 {
		t.Fatalf("20 picks gave %d ports: not random enough for parallel runs", len(seen))
	}
}
