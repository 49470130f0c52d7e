package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"sync"
)

// standaloneAgentd is where an agentd started on its own (svcd agentd)
// listens by default: the proxy's target when this daemon spawns none and
// agentd_listen is not set.
const standaloneAgentd = "127.0.0.1:4319"

// agentdEndpoint is this daemon's agentd (issue 34 §7): its address and the
// secret it proves itself with. One daemon, its own agentd: without an
// agentd_listen the address is a free loopback port chosen when the daemon
// starts (kept across agentd restarts), never a fixed port another daemon
// on the host would also take; and the proxy checks every answer's proof
// of the secret, so it never talks to another daemon's agentd.
type agentdEndpoint struct {
	once   sync.Once
	addr   string
	secret string
}

// agentd returns the endpoint, computed once.
func (s *Server) agentd() (addr, secret string) {
	e := &s.agentdEP
	e.once.Do(func() {
		e.addr = s.cfg.AgentdListen
		if s.cfg.AgentdSpawn {
			var b [32]byte
			_, _ = rand.Read(b[:])
			e.secret = hex.EncodeToString(b[:])
			if e.addr == "" {
				e.addr = freeLoopbackPort()
			}
		}
		if e.addr == "" {
			e.addr = standaloneAgentd
		}
	})
	return e.addr, e.secret
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1 (falling
// back to the standalone default when it cannot).
func freeLoopbackPort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return standaloneAgentd
	}
	defer l.Close()
	return l.Addr().String()
}
