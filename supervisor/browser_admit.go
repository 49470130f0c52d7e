package supervisor

import (
	"github.com/svcd/svcd/supervisor/relayadmit"
	"github.com/svcd/svcd/workers/relay"
)

// relayAdmitter puts leases and batched outcomes between the relay handler
// and the engine (performance, issue 15). Both backends (the relay worker's
// managed client and the in-process engine) lease.
var (
	_ relayadmit.Backend = (*managedRelay)(nil)
	_ relayadmit.Backend = (*relay.Engine)(nil)
)

func (s *Server) relayAdmitter(be relayadmit.Backend, f *relay.Flusher) *relayadmit.Admitter {
	return relayadmit.New(be, relayadmit.Options{OnChanged: f.Kick, Logger: s.log.Named("relay")})
}
