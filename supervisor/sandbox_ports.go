package supervisor

import (
	"net"
	"strconv"
)

// daemonPorts are the TCP ports of the daemon's listeners that a command
// must not connect to (issue 32: the API is not a back door): the API, raft
// and agentd. An address without a port (raft in memory) adds nothing.
func daemonPorts(addrs ...string) []uint16 {
	var out []uint16
	seen := map[uint16]bool{}
	for _, a := range addrs {
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 || seen[uint16(n)] {
			continue
		}
		seen[uint16(n)] = true
		out = append(out, uint16(n))
	}
	return out
}
