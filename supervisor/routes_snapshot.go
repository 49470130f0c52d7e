package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/snapfile"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor/openapi"
)

// SnapshotMediaType is the Content-Type of a snapshot file on the wire.
const SnapshotMediaType = "application/vnd.svcd.snapshot"

// snapshotRoutes are backup and restore of the raft state (docs/snapshots.md).
func (s *Server) snapshotRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/v1/snapshot", Name: "snapshot.save", Area: "snapshot", Scope: ScopeControl, Kind: KindRead, Auth: true, Raw: true,
			Response: openapi.Raw{ContentType: SnapshotMediaType, Description: "the snapshot file"},
			Errors:   openapi.Codes{http.StatusServiceUnavailable: {"snapshot_failed"}},
			Summary:  "Take a consistent raft snapshot now and stream it as a snapshot file (header with format_version, cluster_id, index, term, created_at; payload; SHA-256; HMAC-SHA256 under the cluster key's snapshot key, format 2). Writes go on meanwhile; every write acknowledged before the call is in it. svcctl snapshot save FILE.",
			Handle:   s.handleSnapshotSave},
		{Method: http.MethodPost, Path: "/v1/snapshot/restore", Name: "snapshot.restore", Area: "snapshot", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			BodyType: SnapshotMediaType, MaxBody: raftstore.MaxSnapshotPayload + 1<<20,
			Request:  openapi.Raw{ContentType: SnapshotMediaType, Description: "a snapshot file from GET /v1/snapshot or svcd snapshot save"},
			Response: restoreAnswer{},
			Errors: openapi.Codes{http.StatusUnprocessableEntity: {"invalid_snapshot", "snapshot_tampered", "invalid_field"}, http.StatusConflict: {"cluster_mismatch"},
				http.StatusServiceUnavailable: {"not_leader", "restore_failed"}},
			Query:   []Field{{Name: "force", Type: "boolean", Default: false, Note: "restore a snapshot of another cluster (header cluster_id) anyway (the cluster keeps its own id); bring back credentials revoked after the snapshot was taken; take the credentials of an unauthenticated (format 1) file"}},
			Summary: "Replace the whole state with a snapshot file (body: the file, Content-Type: " + SnapshotMediaType + "). The file is checked whole first; a corrupt, truncated or foreign one, or one whose state breaks a rule the commands keep (unknown mode, bad time, oversized list), is refused with 422 invalid_snapshot and changes nothing; a format-2 file whose MAC does not match this cluster's key is 422 snapshot_tampered; a snapshot of another cluster is refused with 409 cluster_mismatch (details: snapshot_cluster_id, cluster_id) unless force=true. The cluster's live members and leader addresses are kept. Answer: the restored header, authenticated, and credentials (clients_added, clients_removed, revocations_kept, revocations_undone, unauthenticated_dropped, warnings). svcctl snapshot restore [-force] FILE.",
			Handle:  s.handleSnapshotRestore},
	}
}

func (s *Server) handleSnapshotSave(w http.ResponseWriter, r *http.Request) error {
	// A save right after a member joined waits for raft to apply that
	// configuration entry (OpenBackup), a few milliseconds, bounded here.
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	b, err := s.node.OpenBackup(ctx)
	if err != nil {
		return api.Unavailable("snapshot_failed", "%v", err)
	}
	defer b.Close()
	h := w.Header()
	h.Set("Content-Type", SnapshotMediaType)
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=\"svcd-%d.snap\"", b.Header.Index))
	h.Set("X-Svcd-Snapshot-Index", fmt.Sprint(b.Header.Index))
	w.WriteHeader(http.StatusOK)
	if err := b.Write(w); err != nil {
		// Too late for a JSON error: the file is cut short, and its missing
		// checksum makes any restore of it refuse.
		s.log.Warn("snapshot stream failed", "error", err)
	}
	return nil
}

func (s *Server) handleSnapshotRestore(w http.ResponseWriter, r *http.Request) error {
	hdr, payload, authenticated, err := raftstore.ReadBackup(r.Body, s.node.SnapshotKey())
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return api.NewError(http.StatusRequestEntityTooLarge, "body_too_large", "snapshot file is larger than %d bytes", mbe.Limit)
		}
		if errors.Is(err, snapfile.ErrTampered) {
			s.log.Warn("snapshot restore refused: the file is not authentic", "remote", r.RemoteAddr)
			return api.Unprocessable("snapshot_tampered", "snapshot refused, nothing changed: %v", err)
		}
		return api.Unprocessable("invalid_snapshot", "snapshot refused, nothing changed: %v", err)
	}
	force := false
	switch v := r.URL.Query().Get("force"); v {
	case "", "false", "0":
	case "true", "1":
		force = true
	default:
		return api.Unprocessable("invalid_field", "force=%q: want true or false", v)
	}
	forced := force && hdr.ClusterID != "" && hdr.ClusterID != s.node.ClusterID()
	report, err := s.node.RestoreBackup(r.Context(), hdr, payload, raftstore.RestoreOptions{Force: force, Authenticated: authenticated})
	if err != nil {
		var mismatch *raftstore.ClusterMismatchError
		if errors.As(err, &mismatch) {
			return api.Conflict("cluster_mismatch", "%v", err).WithDetails(map[string]any{
				"snapshot_cluster_id": mismatch.Snapshot, "cluster_id": mismatch.Cluster})
		}
		if errors.Is(err, raftstore.ErrNotLeader) {
			return api.Unavailable("not_leader", "only the leader restores a snapshot; nothing changed")
		}
		return api.Unavailable("restore_failed", "%v", err)
	}
	s.log.Warn("state replaced from a snapshot", "index", hdr.Index, "term", hdr.Term, "cluster_id", hdr.ClusterID, "created_at", hdr.CreatedAt,
		"authenticated", authenticated, "clients_added", report.ClientsAdded, "clients_removed", report.ClientsRemoved,
		"revocations_kept", report.RevocationsKept, "revocations_undone", report.RevocationsUndone, "unauthenticated_dropped", report.UnauthenticatedDropped)
	for _, w := range report.Warnings {
		s.log.Warn("snapshot restore: " + w)
	}
	api.WriteOK(w, restoreAnswer{AppliedIndex: s.node.AppliedIndex(), ClusterID: s.node.ClusterID(), Forced: forced, Restored: hdr,
		Authenticated: authenticated, Credentials: report})
	return nil
}

// restoreAnswer is POST /v1/snapshot/restore's data. Fields in the order
// the map it replaced encoded them (byte-compatible answers).
type restoreAnswer struct {
	AppliedIndex uint64          `json:"applied_index"`
	ClusterID    string          `json:"cluster_id"`
	Forced       bool            `json:"forced"`
	Restored     snapfile.Header `json:"restored"`
	// Authenticated: the file's MAC matched (format 2); false for a format
	// 1 file, which restores with a warning (issue 34 §4).
	Authenticated bool `json:"authenticated"`
	// Credentials is what the restore changed in pairing credentials.
	Credentials raftstore.RestoreReport `json:"credentials"`
}
