package supervisor

import (
	"net/http"

	"github.com/svcd/svcd/shared/api"
)

// RouteDoc is a route as the describe documents and capabilities list it.
type RouteDoc struct {
	Method  string  `json:"method"`
	Path    string  `json:"path"`
	Name    string  `json:"name"`
	Area    string  `json:"area"`
	Kind    string  `json:"kind"`
	Summary string  `json:"summary"`
	Auth    string  `json:"auth,omitempty"`
	Body    []Field `json:"body,omitempty"`
	Query   []Field `json:"query,omitempty"`
}

// describePath turns a mux template ({task_id}) into SPEC.md's form (:task_id).
func describePath(p string) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '{':
			out = append(out, ':')
		case '}':
		default:
			out = append(out, p[i])
		}
	}
	return string(out)
}

func docOf(rt Route) RouteDoc {
	d := RouteDoc{Method: rt.Method, Path: describePath(rt.Path), Name: rt.Name, Area: rt.Area, Kind: rt.Kind, Summary: rt.Summary, Body: rt.Body, Query: rt.Query}
	if rt.Auth {
		d.Auth = "Authorization: Bearer <SVC_SHARED_TOKEN>"
	}
	return d
}

func (s *Server) docs(match func(Route) bool) []RouteDoc {
	out := []RouteDoc{}
	for _, rt := range s.routes {
		if match(rt) {
			out = append(out, docOf(rt))
		}
	}
	return out
}

// recommendedOrder is SPEC.md's client order, as steps a caller can follow.
var recommendedOrder = []string{
	"read the endpoint documentation: GET /describe",
	"GET /describe/business or GET /describe/control",
	"optionally GET /v1/capabilities",
	"read state: GET /v1/system/state, GET /v1/browser",
	"only then issue control actions or host operations (read host_operations in GET /describe/control first)",
}

var conventions = map[string]any{
	"success": `{"ok":true,"data":…}`,
	"error":   `{"ok":false,"error":{"code":"…","message":"…"}}`,
	"statuses": map[string]string{
		"400": "malformed JSON; two Authorization headers (duplicate_authorization)",
		"401": "missing or wrong bearer token",
		"403": "Host header not allowed (host_not_allowed); a write from a browser origin that is neither this daemon's nor in allowed_origins (origin_not_allowed); Sec-Fetch-Site cross-site or same-site (cross_site_request)",
		"404": "unknown route or resource", "405": "wrong method",
		"409": "conflict (unknown clientId, no captured credentials)",
		"413": "body over the cap",
		"415": "a write with a body that is not Content-Type: application/json (unsupported_media_type)",
		"422": "failed validation; unknown_field names a body field the route does not take",
		"429": "relay rate limit, backoff or open breaker; exec_busy past exec_max_concurrent (retry_after_ms in error.details, Retry-After header)",
		"500": "internal error (recovered; the listener stays up)",
		"502": "the browser relay failed upstream",
		"503": "dependency not available (no browser client, not leader, worker down, too_many_unpaired browser connections); starting while the daemon starts; catching_up when a read cannot be proved current yet (Retry-After)",
		"504": "the plugin did not answer in time",
	},
	"request_bodies": "JSON objects sent with Content-Type: application/json (charset allowed). Field names are exact and case-sensitive; a field the route does not take is a 422 unknown_field naming it (a typo such as timeout_ms for timeoutMs never passes silently). An empty body counts as {}.",
	"writes":         "Every method but GET, HEAD and OPTIONS is a write and passes one guard before any route: a present Origin must be this daemon's own or in allowed_origins, Sec-Fetch-Site must not be cross-site or same-site, and a body must be application/json. CORS preflights get allow headers only for allowed_origins.",
	"state_index":    "Every JSON answer carries X-Svcd-State-Index: the raft index applied on the answering node when it answered. After a write it covers the write, so a later read whose index is at least as high includes it.",
	"read_modes":     "GET reads of the state are linearizable by default on every node (they reflect every write acknowledged before they began). ?stale or X-Svcd-Consistency: stale answers from this node at once, with X-Svcd-Known-Leader, X-Svcd-Last-Contact (ms) and X-Svcd-Behind (entries) saying how current it is.",
	"time":           "RFC 3339 UTC",
}

func (s *Server) handleDescribeIndex(w http.ResponseWriter, r *http.Request) error {
	api.WriteOK(w, describeIndex{
		Name:        "svcd",
		Description: "Local control and browser-relay service. Read a scoped describe before calling anything else.",
		Describes: []describeRef{
			{Path: "/describe/business", Scope: ScopeBusiness, Summary: "browser requests, agent sessions, renewal automation, read-only queries"},
			{Path: "/describe/control", Scope: ScopeControl, Summary: "system control, plugin management, status views, host operations"},
		},
		RecommendedOrder: recommendedOrder,
		Discovery:        s.docs(func(rt Route) bool { return rt.Scope == ScopeDiscovery }),
		Conventions:      conventions,
	})
	return nil
}

// describeIndex is GET /describe's data. Fields here and below are in the
// order the maps they replaced encoded them (byte-compatible answers).
type describeIndex struct {
	Conventions      map[string]any `json:"conventions"`
	Describes        []describeRef  `json:"describes"`
	Description      string         `json:"description"`
	Discovery        []RouteDoc     `json:"discovery"`
	Name             string         `json:"name"`
	RecommendedOrder []string       `json:"recommended_order"`
}

type describeRef struct {
	Path    string `json:"path"`
	Scope   string `json:"scope"`
	Summary string `json:"summary"`
}

// describeScope is GET /describe/business's and /describe/control's data;
// HostOperations and SystemModes are on the control surface only.
type describeScope struct {
	Conventions      map[string]any `json:"conventions"`
	Description      string         `json:"description"`
	HostOperations   *hostopsDoc    `json:"host_operations,omitempty"`
	Instructions     map[string]any `json:"instructions"`
	Name             string         `json:"name"`
	RecommendedOrder []string       `json:"recommended_order"`
	Routes           []RouteDoc     `json:"routes"`
	Surface          string         `json:"surface"`
	SystemModes      []string       `json:"system_modes,omitempty"`
}

// hostopsDoc is the host_operations section of GET /describe/control.
type hostopsDoc struct {
	Auth   string         `json:"auth"`
	Limits map[string]any `json:"limits"`
	Notes  []string       `json:"notes"`
	Result string         `json:"result"`
	Routes []RouteDoc     `json:"routes"`
}

// capabilitiesAnswer is GET /v1/capabilities's data.
type capabilitiesAnswer struct {
	Cautions   []string   `json:"cautions"`
	Diagnostic []RouteDoc `json:"diagnostic"`
	Read       []RouteDoc `json:"read"`
	Write      []RouteDoc `json:"write"`
}

func (s *Server) handleDescribeScope(scope string) HandlerFn {
	return func(w http.ResponseWriter, r *http.Request) error {
		doc := describeScope{
			Name:             "svcd",
			Surface:          scope,
			RecommendedOrder: recommendedOrder,
			Routes:           s.docs(func(rt Route) bool { return rt.Scope == scope }),
			Conventions:      conventions,
			Instructions:     instructionsDescribe(),
		}
		if scope == ScopeControl {
			doc.Description = "System control (automation mode), plugin management, status views and host operations."
			doc.SystemModes = []string{"running", "paused", "draining"}
			doc.HostOperations = &hostopsDoc{
				Auth:   "Authorization: Bearer <SVC_SHARED_TOKEN>; missing or wrong gives 401 before anything runs",
				Result: "outcome in data.ok, payload in data.result",
				Routes: s.docs(func(rt Route) bool { return rt.Area == "hostops" }),
				Limits: s.hostopsLimits(),
				Notes:  hostopsNotes,
			}
		} else {
			doc.Description = "Business topics: relayed browser requests, agent sessions, renewal automation and read-only queries."
		}
		api.WriteOK(w, doc)
		return nil
	}
}

func (s *Server) handleCapabilities(w http.ResponseWriter, r *http.Request) error {
	byKind := func(kind string) []RouteDoc { return s.docs(func(rt Route) bool { return rt.Kind == kind }) }
	api.WriteOK(w, capabilitiesAnswer{
		Read:       byKind(KindRead),
		Write:      byKind(KindWrite),
		Diagnostic: byKind(KindDiagnostic),
		Cautions: []string{
			"write routes change durable state: read GET /v1/system/state first",
			"host operations run on this host with the daemon's privileges and need the bearer token",
			"while the system is paused, ordinary instructions are recorded as system_paused and not run",
			"raw cookie, token and header values are never stored or returned",
		},
	})
	return nil
}
