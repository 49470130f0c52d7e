package supervisor

import (
	"net/http"

	"github.com/svcd/svcd/shared/api"
)

// The system state document is a pure function of the FSM state and of who
// leads: GET /v1/system/state is read far more often than either changes, so
// its encoded answer is kept and reused while both stay the same.

// stateKey is what the system state document depends on.
type stateKey struct {
	version    uint64 // raftstore state version (moves with every applied change)
	leaderID   string
	leaderAddr string
	self       bool
}

// encodedState is one encoded answer and the key it was built for.
type encodedState struct {
	key  stateKey
	body []byte
}

// writeSystemState answers the system state document, from the kept
// encoding when neither the state nor the leader changed since it was built.
func (s *Server) writeSystemState(w http.ResponseWriter) {
	id, addr := s.node.Leader()
	now := stateKey{version: s.node.StateVersion(), leaderID: id, leaderAddr: addr, self: s.node.IsLeader()}
	enc := s.stateAnswer.Load()
	if enc == nil || enc.key != now {
		st, version := s.systemState()
		// The same bytes api.WriteOK writes: its envelope, a final newline.
		body, err := api.AppendJSON(nil, api.Envelope{OK: true, Data: st})
		if err != nil {
			api.WriteError(w, err)
			return
		}
		enc = &encodedState{key: stateKey{version: version, leaderID: st.Leader.NodeID, leaderAddr: st.Leader.Address, self: st.Leader.Self}, body: append(body, '\n')}
		s.stateAnswer.Store(enc)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(enc.body)
}
