package supervisor

import (
	"net/http"
	"sort"

	"github.com/svcd/svcd/supervisor/openapi"
)

// Scopes say which describe document lists a route (SPEC.md: business topics
// versus system control, plugin management and host operations).
const (
	ScopeDiscovery = "discovery"
	ScopeBusiness  = "business"
	ScopeControl   = "control"
)

// Kinds split /v1/capabilities into read, write and diagnostic endpoints.
const (
	KindRead       = "read"
	KindWrite      = "write"
	KindDiagnostic = "diagnostic"
)

// Route is one entry of the route table. The router, the describe documents
// and /v1/capabilities are all built from the same table, so they cannot drift.
type Route struct {
	Method  string
	Path    string // gorilla/mux template, e.g. /v1/tasks/{task_id}
	Name    string // stable identifier, e.g. system.pause
	Area    string // e.g. system, hostops, browser
	Scope   string
	Kind    string
	Summary string
	Auth    bool      // requires Authorization: Bearer <shared token>
	Body    []Field   // request body fields (describe only)
	Query   []Field   // query parameters (describe only)
	Handle  HandlerFn // returns an error to have it rendered as the JSON error body
	Raw     bool      // Handle writes the whole response itself (HTML, text, streams, WebSocket)
	NoLimit bool      // no body cap (WebSocket upgrades, streams)
	MaxBody int64     // body cap for this route when above zero (default: max_body_bytes)
	// Local routes run on the node they are sent to even on a standby (host
	// operations act on this host); other writes are forwarded to the leader.
	Local bool
	// Request is the zero value of the body type Handle decodes and
	// Response the zero value of what it writes as data (or an openapi.Raw);
	// Errors are the route's own failures beyond the ones every route of its
	// kind shares (openapi_doc.go). GET /v1/openapi.json is generated from
	// them; a route without Response, or a write without Request (or
	// openapi.NoBody{}), fails TestOpenAPIEveryRouteTyped.
	Request  any
	Response any
	Errors   openapi.Codes
	// BodyType is the request body's media type when it is not
	// application/json (a snapshot file); the write guard then asks for it
	// instead. Fixed paths only.
	BodyType string
}

// Field documents one request field or query parameter.
type Field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required,omitempty"`
	Default  any    `json:"default,omitempty"`
	Note     string `json:"note,omitempty"`
}

// HandlerFn is a route handler. A non-nil error is written as the common JSON
// error body (api.WriteError); the handler must then not have written.
type HandlerFn func(w http.ResponseWriter, r *http.Request) error

// routeTable is every route the supervisor serves. Each area keeps its routes
// in its own routes_<area>.go; add the area's function here.
func (s *Server) routeTable() []Route {
	var all []Route
	for _, area := range [][]Route{
		s.discoveryRoutes(),
		s.systemRoutes(),
		s.statusRoutes(),
		s.hostopsRoutes(),
		s.workerRoutes(),
		s.browserRoutes(),
		s.pairingRoutes(),
		s.clusterRoutes(),
		s.renewalRoutes(),
		s.taskRoutes(),
		s.instructionRoutes(),
		s.agentRoutes(),
		s.snapshotRoutes(),
		s.rootRoutes(),
	} {
		all = append(all, area...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	return all
}
