package status

import (
	"bytes"
	"net/http"

	"github.com/svcd/svcd/shared/api"
)

// WriteJSON answers GET /v1/status: the envelope around snap, or a 503 error
// that still carries the snapshot when the daemon could not be read.
func WriteJSON(w http.ResponseWriter, snap Snapshot) {
	if !snap.Reachable {
		api.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{
			"ok":    false,
			"error": api.ErrorField{Code: "daemon_unreachable", Message: snap.Error},
			"data":  snap,
		})
		return
	}
	api.WriteOK(w, snap)
}

// WritePanel answers GET /v1/status/ui, with 503 when the daemon is down.
func WritePanel(w http.ResponseWriter, snap Snapshot) {
	var buf bytes.Buffer
	if err := RenderHTML(&buf, snap); err != nil {
		api.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !snap.Reachable {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(buf.Bytes())
}
