package supervisor

import (
	"net/http"
	"strings"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/version"
)

// PanelPath is the status panel a person lands on from GET /.
const PanelPath = "/v1/status/ui"

// rootIndex is GET / for a program: where to go next.
type rootIndex struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Panel    string `json:"panel"`    // the HTML status panel
	Describe string `json:"describe"` // the self-description, start here
	OpenAPI  string `json:"openapi"`
	Health   string `json:"health"`
}

// rootRoutes is GET /: a browser (Accept: text/html) is sent to the status
// panel; anything else gets a short JSON index instead of a 404.
func (s *Server) rootRoutes() []Route {
	return []Route{{
		Method: http.MethodGet, Path: "/", Name: "root", Area: "discovery", Scope: ScopeDiscovery, Kind: KindRead,
		Summary:  "Entry point: a browser is redirected to the status panel (" + PanelPath + "), other clients get a short JSON index.",
		Response: rootIndex{},
		Handle: func(w http.ResponseWriter, r *http.Request) error {
			if wantsHTML(r) {
				http.Redirect(w, r, PanelPath, http.StatusFound)
				return nil
			}
			api.WriteOK(w, rootIndex{Name: "svcd", Version: version.Get().Version, Panel: PanelPath,
				Describe: "/describe", OpenAPI: "/v1/openapi.json", Health: "/health"})
			return nil
		},
	}}
}

// wantsHTML is true for a browser's navigation (Accept lists text/html);
// curl's */* and API clients' application/json stay JSON.
func wantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			return true
		}
	}
	return false
}
