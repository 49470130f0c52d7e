package supervisor

import (
	"net/http"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/version"
	"github.com/svcd/svcd/supervisor/openapi"
)

// openAPIDocument is GET /v1/openapi.json: the route table's routes with the
// types their handlers decode and answer, the error envelope, the bearer
// scheme and each route's errors.
func (s *Server) openAPIDocument() map[string]any {
	ops := make([]openapi.Operation, 0, len(s.routes))
	for _, rt := range s.routes {
		ops = append(ops, operationOf(rt))
	}
	return openapi.Build(openapi.Info{
		Title:       "svcd",
		Version:     version.Get().Version,
		Description: "Local control and browser-relay service. Generated from the supervisor's route table; GET /describe says the same in prose.",
	}, ops, api.ErrorBody{})
}

func operationOf(rt Route) openapi.Operation {
	op := openapi.Operation{
		Method: rt.Method, Path: openapi.PathOf(rt.Path), Name: rt.Name, Area: rt.Area, Summary: rt.Summary, Auth: rt.Auth,
		Request: rt.Request, Response: rt.Response, Notes: map[string]string{},
		Errors: sharedErrors(rt).Add(rt.Errors),
	}
	for _, f := range rt.Body {
		if f.Required {
			op.Required = append(op.Required, f.Name)
		}
		op.Notes[f.Name] = f.Note
	}
	for _, q := range rt.Query {
		op.Query = append(op.Query, openapi.Param{Name: q.Name, Type: q.Type, Required: q.Required, Note: q.Note})
	}
	return op
}

// takesBody reports whether rt's handler reads a JSON body.
func takesBody(rt Route) bool {
	switch rt.Request.(type) {
	case nil, openapi.NoBody, openapi.Raw:
		return false
	}
	return true
}

// isWrite: every method but GET, HEAD and OPTIONS passes the write guard.
func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// sharedErrors are the failures a route has because of what it is, decided
// by the middleware every route goes through (server.go wrap, guard,
// frontDoor) rather than by its handler.
func sharedErrors(rt Route) openapi.Codes {
	e := openapi.Codes{
		http.StatusForbidden:           {"host_not_allowed"},
		http.StatusInternalServerError: {"internal_error"},
	}
	if rt.Auth {
		e.Add(openapi.Codes{http.StatusUnauthorized: {"unauthorized"}, http.StatusBadRequest: {"duplicate_authorization"}})
	}
	if isWrite(rt.Method) {
		e.Add(openapi.Codes{http.StatusForbidden: {"origin_not_allowed", "cross_site_request"}, http.StatusUnsupportedMediaType: {"unsupported_media_type"}})
		if !rt.NoLimit {
			e.Add(openapi.Codes{http.StatusRequestEntityTooLarge: {"body_too_large"}})
		}
		if !rt.Local {
			// A standby forwards it to the leader (cluster.Forward).
			e.Add(openapi.Codes{http.StatusServiceUnavailable: {"no_leader", "leader_unreachable", "not_leader"}})
		}
	}
	if rt.readsState() {
		// Consistent reads wait for a read index (consistentread.go).
		e.Add(openapi.Codes{http.StatusServiceUnavailable: {"catching_up", "no_leader", "leader_unreachable", "not_leader"}})
	}
	if takesBody(rt) {
		e.Add(openapi.Codes{http.StatusBadRequest: {"malformed_json", "body_unreadable"}, http.StatusUnprocessableEntity: {"unknown_field", "invalid_field"}})
	}
	return e
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) error {
	// The bare document, not the envelope: tools read it as is.
	api.WriteJSON(w, http.StatusOK, s.openAPIDocument())
	return nil
}
