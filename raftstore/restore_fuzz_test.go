package raftstore

import (
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore/snapfile"
)

// FuzzRestoredState: no payload panics the restore's decoding, validation
// or merge; what is accepted stays accepted after the merge with a live
// view (the pairing and cluster areas rewritten), and the merge never adds
// a client the snapshot did not hold.
func FuzzRestoredState(f *testing.F) {
	f.Add([]byte(`{"system":{"mode":"paused"}}`))
	f.Add([]byte(`{"system":{"mode":"exploded"}}`))
	f.Add([]byte(`{"pairing":{"clients":{"c1":{"client_id":"c1","cred_hash":"` + hex64('a') + `","scopes":["bridge"],"paired_at":"2026-01-01T00:00:00Z"}}}}`))
	f.Add([]byte(`{"pairing":{"codes":{"x":{"hash":"x"}}}}`))
	f.Add([]byte(`{"cluster":{"members":{"n1":{"node_id":"n1","api_addr":"127.0.0.1:1"}}}}`))
	live := liveRestoreView{clients: map[string]string{"c1": hex64('b')},
		revoked: map[string]Revocation{"c1": {ClientID: "c1", CredHash: hex64('a'), At: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}},
		cluster: ClusterState{ID: "live", Members: map[string]*ClusterMember{"n1": {NodeID: "n1", APIAddr: "127.0.0.1:2"}}}}
	f.Fuzz(func(t *testing.T, payload []byte) {
		s, err := decodeRestoredState(payload)
		if err != nil {
			return
		}
		before := map[string]bool{}
		for id := range s.Pairing.Clients {
			before[id] = true
		}
		for _, opts := range []RestoreOptions{{}, {Force: true, Authenticated: true}} {
			cp := *s
			cp.Pairing = clonePairing(s.Pairing)
			lv := live
			lv.revoked = map[string]Revocation{}
			for k, v := range live.revoked {
				lv.revoked[k] = v
			}
			mergeRestoredPairing(&cp.Pairing, lv, snapfile.Header{CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, opts)
			for id := range cp.Pairing.Clients {
				if !before[id] {
					t.Fatalf("the merge added client %q", id)
				}
			}
			out, err := withLiveSections(payload, "live", cp.Pairing, lv.cluster)
			if err != nil {
				t.Fatalf("an accepted payload does not rewrite: %v", err)
			}
			if _, err := decodeRestoredState(out); err != nil {
				t.Fatalf("the rewritten payload is refused: %v", err)
			}
		}
	})
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// clonePairing copies the maps the merge changes.
func clonePairing(p PairingState) PairingState {
	out := p
	out.Clients = map[string]*PairedClient{}
	for k, v := range p.Clients {
		out.Clients[k] = v
	}
	out.Revoked = map[string]*Revocation{}
	for k, v := range p.Revoked {
		out.Revoked[k] = v
	}
	return out
}
