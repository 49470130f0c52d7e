package raftstore

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/svcd/svcd/raftstore/snapfile"
)

// What a restore keeps from the live state (issue 34 §5): the cluster's
// members and leader (a snapshot's addresses are those of when and where it
// was taken; /v1/cluster, /rolez and forwarding must name the live ones at
// once), the revocation records, and — unless forced — revocations made
// after the snapshot was taken, so a restore never silently brings back a
// revoked credential. A file that is not authenticated (format 1) adds no
// credential unless forced.

// RestoreOptions are the caller's choices for RestoreBackup.
type RestoreOptions struct {
	// Force restores a snapshot of another cluster, brings back credentials
	// revoked after the snapshot was taken, and takes the credentials of an
	// unauthenticated file.
	Force bool
	// Authenticated says the file's MAC matched this cluster's key.
	Authenticated bool
}

// RestoreReport is what a restore changed in credentials, by client id.
type RestoreReport struct {
	// ClientsAdded are paired by the restore (not paired now, or now with
	// another credential).
	ClientsAdded []string `json:"clients_added"`
	// ClientsRemoved are paired now and not after the restore.
	ClientsRemoved []string `json:"clients_removed"`
	// RevocationsKept are credentials revoked after the snapshot was taken
	// that the restore left revoked; RevocationsUndone those it brought
	// back (force).
	RevocationsKept   []string `json:"revocations_kept"`
	RevocationsUndone []string `json:"revocations_undone"`
	// UnauthenticatedDropped are credentials an unauthenticated file would
	// have added, left out (force takes them).
	UnauthenticatedDropped []string `json:"unauthenticated_dropped"`
	Warnings               []string `json:"warnings"`
}

// liveRestoreView is what a restore reads from the live state first.
type liveRestoreView struct {
	clients map[string]string // client id → credential hash
	revoked map[string]Revocation
	cluster ClusterState
}

func takeLiveView(s *State) liveRestoreView {
	v := liveRestoreView{clients: map[string]string{}, revoked: map[string]Revocation{}}
	for id, cl := range s.Pairing.Clients {
		v.clients[id] = cl.CredHash
	}
	for id, rv := range s.Pairing.Revoked {
		v.revoked[id] = *rv
	}
	v.cluster = ClusterState{ID: s.Cluster.ID, Leader: s.Cluster.Leader, Members: map[string]*ClusterMember{}}
	for id, m := range s.Cluster.Members {
		cp := *m
		v.cluster.Members[id] = &cp
	}
	return v
}

// mergeRestoredPairing adjusts the snapshot's pairing area p as the rules
// above say and reports the differences.
func mergeRestoredPairing(p *PairingState, live liveRestoreView, h snapfile.Header, opts RestoreOptions) RestoreReport {
	p.normalize()
	r := RestoreReport{ClientsAdded: []string{}, ClientsRemoved: []string{}, RevocationsKept: []string{}, RevocationsUndone: []string{}, UnauthenticatedDropped: []string{}, Warnings: []string{}}
	for id, cl := range p.Clients {
		rv, revoked := live.revoked[id]
		if !revoked || !rv.At.After(h.CreatedAt) || rv.CredHash != cl.CredHash {
			continue
		}
		if opts.Force {
			r.RevocationsUndone = append(r.RevocationsUndone, id)
			delete(live.revoked, id)
			continue
		}
		r.RevocationsKept = append(r.RevocationsKept, id)
		delete(p.Clients, id)
	}
	// The live revocation records stay (the later one per client).
	for id, rv := range live.revoked {
		if cur := p.Revoked[id]; cur == nil || rv.At.After(cur.At) {
			cp := rv
			p.Revoked[id] = &cp
		}
	}
	evictOldest(p.Revoked, MaxPairedClients, func(r *Revocation) time.Time { return r.At })
	if !opts.Authenticated {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the snapshot file is format %d: not authenticated (no MAC), so anyone could have edited it", h.FormatVersion))
		for id, cl := range p.Clients {
			if live.clients[id] == cl.CredHash || opts.Force {
				continue
			}
			r.UnauthenticatedDropped = append(r.UnauthenticatedDropped, id)
			delete(p.Clients, id)
		}
		if len(r.UnauthenticatedDropped) > 0 {
			r.Warnings = append(r.Warnings, "credentials the unauthenticated file would add were left out; restore with force to take them")
		}
	}
	for id, cl := range p.Clients {
		if live.clients[id] != cl.CredHash {
			r.ClientsAdded = append(r.ClientsAdded, id)
		}
	}
	for id := range live.clients {
		if p.Clients[id] == nil {
			r.ClientsRemoved = append(r.ClientsRemoved, id)
		}
	}
	if len(r.RevocationsUndone) > 0 {
		r.Warnings = append(r.Warnings, "force: credentials revoked after the snapshot was taken are valid again")
	}
	for _, l := range [][]string{r.ClientsAdded, r.ClientsRemoved, r.RevocationsKept, r.RevocationsUndone, r.UnauthenticatedDropped} {
		sort.Strings(l)
	}
	return r
}

// withLiveSections returns payload with its pairing area replaced by
// pairing and its cluster area by the live one (with id): everything else
// is passed as it was.
func withLiveSections(payload []byte, id string, pairing PairingState, cluster ClusterState) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(payload, &top); err != nil {
		return nil, fmt.Errorf("snapshot payload is not svcd state: %v", err)
	}
	cluster.ID = id
	for key, v := range map[string]any{"pairing": pairing, "cluster": cluster} {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		top[key] = raw
	}
	return json.Marshal(top)
}
