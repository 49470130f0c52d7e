package openapi

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Version is the OpenAPI version the document declares.
const Version = "3.1.0"

// NoBody marks a route that takes no request body on a method that could
// carry one (a POST whose meaning is in its path). It is a declaration, not
// an omission: a route with neither a request type nor NoBody fails the
// document's completeness test.
type NoBody struct{}

// Raw marks an answer that is not the JSON envelope: HTML, text, a stream or
// a WebSocket upgrade (Status 101). As a Request it marks a body that is not
// JSON (ContentType says which; Route.BodyType has the guard ask for it).
type Raw struct {
	ContentType string
	Status      int // 0: 200
	Description string
}

// Codes are the failures a route can answer: status to stable error codes.
type Codes map[int][]string

// Add merges more codes into c (made if nil) and returns it.
func (c Codes) Add(more Codes) Codes {
	if c == nil {
		c = Codes{}
	}
	for status, codes := range more {
		for _, code := range codes {
			if !contains(c[status], code) {
				c[status] = append(c[status], code)
			}
		}
	}
	return c
}

// Param is one query parameter.
type Param struct {
	Name     string
	Type     string // JSON Schema type: string, integer, boolean
	Required bool
	Note     string
}

// Operation is one route as the document needs it.
type Operation struct {
	Method, Path, Name, Area, Summary string
	Auth                              bool
	// Request is the zero value of the body type the handler decodes; nil
	// for a route without a body, NoBody{} to say so on a POST.
	Request any
	// Required names the request fields that must be present; Notes are
	// their descriptions (both from the route table's Body).
	Required []string
	Notes    map[string]string
	Query    []Param
	// Response is the zero value of the type written as data in
	// {"ok":true,"data":…}, or a Raw.
	Response any
	Errors   Codes
}

// Info heads the document.
type Info struct {
	Title, Version, Description string
}

// SecurityScheme is the name of the bearer token scheme in the document.
const SecurityScheme = "bearerToken"

// RequestIDHeader is echoed or assigned on every answer.
const RequestIDHeader = "X-Request-Id"

// Build writes the document. errorBody is the zero value of the common error
// body type (shared/api.ErrorBody), described once as a component.
func Build(info Info, ops []Operation, errorBody any) map[string]any {
	g := NewSchemas()
	errRef := g.Of(errorBody)
	paths := map[string]any{}
	for _, op := range ops {
		item, _ := paths[op.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[op.Path] = item
		}
		item[strings.ToLower(op.Method)] = operation(g, op, errRef)
	}
	return map[string]any{
		"openapi": Version,
		"info":    map[string]any{"title": info.Title, "version": info.Version, "description": info.Description},
		"paths":   paths,
		"components": map[string]any{
			"schemas": g.Components(),
			"securitySchemes": map[string]any{
				SecurityScheme: map[string]any{"type": "http", "scheme": "bearer",
					"description": "Authorization: Bearer <SVC_SHARED_TOKEN> (the shared token: config shared_token, SVC_SHARED_TOKEN or the token file)"},
			},
			"headers": map[string]any{
				RequestIDHeader: map[string]any{
					"description": "The request's id: the caller's X-Request-Id when it is 1 to 64 characters of [A-Za-z0-9._:-], otherwise one the daemon made. Every log line about the request, in the supervisor and in the worker that served it, carries it as request_id.",
					"schema":      Schema{"type": "string"},
				},
			},
		},
	}
}

func operation(g *Schemas, op Operation, errRef Schema) map[string]any {
	o := map[string]any{
		"operationId": op.Name,
		"summary":     op.Summary,
		"tags":        []any{op.Area},
	}
	var params []any
	for _, name := range pathParams(op.Path) {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": Schema{"type": "string"}})
	}
	for _, q := range op.Query {
		p := map[string]any{"name": q.Name, "in": "query", "schema": Schema{"type": q.Type}}
		if q.Required {
			p["required"] = true
		}
		if q.Note != "" {
			p["description"] = q.Note
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if raw, ok := op.Request.(Raw); ok {
		// A body that is not JSON (a snapshot file): its media type, opaque.
		o["requestBody"] = map[string]any{
			"required":    true,
			"description": raw.Description,
			"content":     map[string]any{raw.ContentType: map[string]any{"schema": Schema{}}},
		}
	} else if body := RequestSchema(g, op); body != nil {
		o["requestBody"] = map[string]any{
			// DecodeJSON reads an empty body as {}: a body is never required
			// on the wire, only the fields the schema requires.
			"required": false,
			"content":  map[string]any{"application/json": map[string]any{"schema": body}},
		}
	}
	if op.Auth {
		o["security"] = []any{map[string]any{SecurityScheme: []any{}}}
	}
	o["responses"] = responses(g, op, errRef)
	return o
}

// RequestSchema is the schema of op's request body, nil when it takes none.
// The body is closed (additionalProperties false) unless the type is a map:
// the decoder refuses a field the type does not have (422 unknown_field).
func RequestSchema(g *Schemas, op Operation) Schema {
	switch op.Request.(type) {
	case nil, NoBody, Raw:
		return nil
	}
	s := g.Inline(op.Request)
	if props, ok := s["properties"].(Schema); ok {
		s = clone(s)
		delete(s, "required") // encoding/json's rule is for answers; requests say their own
		s["additionalProperties"] = false
		var req []any
		for _, name := range op.Required {
			req = append(req, name)
		}
		if len(req) > 0 {
			s["required"] = req
		}
		for name, note := range op.Notes {
			if p, ok := props[name].(Schema); ok && note != "" {
				p = clone(p)
				p["description"] = note
				props[name] = p
			}
		}
	}
	return s
}

func responses(g *Schemas, op Operation, errRef Schema) map[string]any {
	reqID := map[string]any{RequestIDHeader: map[string]any{"$ref": "#/components/headers/" + RequestIDHeader}}
	out := map[string]any{}
	switch r := op.Response.(type) {
	case Raw:
		status := r.Status
		if status == 0 {
			status = http.StatusOK
		}
		resp := map[string]any{"description": r.Description, "headers": reqID}
		if r.ContentType != "" {
			resp["content"] = map[string]any{r.ContentType: map[string]any{"schema": Schema{}}}
		}
		if resp["description"] == "" {
			resp["description"] = http.StatusText(status)
		}
		out[strconv.Itoa(status)] = resp
	default:
		out["200"] = map[string]any{
			"description": "success: the common envelope around data",
			"headers":     reqID,
			"content": map[string]any{"application/json": map[string]any{"schema": Schema{
				"type":     "object",
				"required": []any{"ok", "data"},
				"properties": Schema{
					"ok":   Schema{"const": true},
					"data": g.Of(r),
				},
			}}},
		}
	}
	for status, codes := range op.Errors {
		codes = append([]string(nil), codes...)
		sort.Strings(codes)
		key := strconv.Itoa(status)
		if _, taken := out[key]; taken {
			continue // a Raw answer with an error status (readyz's 503) keeps its own
		}
		codeList := make([]any, len(codes))
		for i, c := range codes {
			codeList[i] = c
		}
		out[key] = map[string]any{
			"description": fmt.Sprintf("%s: error.code is one of %s", http.StatusText(status), strings.Join(codes, ", ")),
			"headers":     reqID,
			"content": map[string]any{"application/json": map[string]any{"schema": Schema{
				"allOf": []any{errRef, Schema{"properties": Schema{"error": Schema{"properties": Schema{"code": Schema{"enum": codeList}}}}}},
			}}},
			"x-error-codes": codeList,
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// pathParams lists the {name} variables of a mux template, in order.
func pathParams(path string) []string {
	var out []string
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(path[i:], '}')
		if j < 0 {
			return out
		}
		name, _, _ := strings.Cut(path[i+1:i+j], ":") // {id:[0-9]+}
		out = append(out, name)
		path = path[i+j+1:]
	}
}

// PathOf turns a mux template into an OpenAPI path: {id:[0-9]+} becomes {id}.
func PathOf(tpl string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tpl, '{')
		j := strings.IndexByte(tpl[max(i, 0):], '}')
		if i < 0 || j < 0 {
			b.WriteString(tpl)
			return b.String()
		}
		name, _, _ := strings.Cut(tpl[i+1:i+j], ":")
		b.WriteString(tpl[:i] + "{" + name + "}")
		tpl = tpl[i+j+1:]
	}
}
