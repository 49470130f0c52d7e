package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/svcd/svcd/supervisor/openapi"
)

// loadOpenAPI fetches GET /v1/openapi.json from a real server and loads it
// with kin-openapi (which validates OpenAPI 3.1 and JSON Schema 2020-12).
func loadOpenAPI(t *testing.T) (*Server, *openapi3.T, map[string]any) {
	t.Helper()
	s, hs := newTestServer(t)
	code, body := get(t, hs.URL+"/v1/openapi.json")
	if code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json = %d %s", code, body)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData([]byte(body))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return s, doc, raw
}

func TestOpenAPIDocumentValidates(t *testing.T) {
	_, doc, _ := loadOpenAPI(t)
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document does not validate: %v", err)
	}
	// The error envelope and the token scheme are in it, and used.
	if doc.Components.SecuritySchemes[openapi.SecurityScheme] == nil {
		t.Fatal("no bearer security scheme")
	}
	exec := doc.Paths.Value("/v1/exec").Post
	if exec == nil || exec.Security == nil || len(*exec.Security) == 0 {
		t.Fatal("POST /v1/exec carries no security requirement")
	}
	if r := exec.Responses.Value("401"); r == nil {
		t.Fatal("POST /v1/exec lists no 401")
	}
	if r := exec.Responses.Value("429"); r == nil || !strings.Contains(*r.Value.Description, "exec_busy") {
		t.Fatalf("POST /v1/exec 429 does not name exec_busy")
	}
	// data.result of exec is execResult, not "anything".
	data := exec.Responses.Value("200").Value.Content.Get("application/json").Schema.Value.Properties["data"].Value
	if data.Properties["result"] == nil || data.Properties["result"].Value.Properties["exitCode"] == nil {
		t.Fatalf("exec's data.result has no exitCode: %+v", data.Properties["result"])
	}
}

// TestOpenAPIValidatorRefusesBrokenDocuments: the validator used above does
// catch a broken 3.1 document, so its silence means something.
func TestOpenAPIValidatorRefusesBrokenDocuments(t *testing.T) {
	_, _, raw := loadOpenAPI(t)
	broken := func(name string, mutate func(map[string]any)) {
		b, _ := json.Marshal(raw)
		var doc map[string]any
		_ = json.Unmarshal(b, &doc)
		mutate(doc)
		b, _ = json.Marshal(doc)
		d, err := openapi3.NewLoader().LoadFromData(b)
		if err == nil {
			err = d.Validate(context.Background())
		}
		if err == nil {
			t.Errorf("%s: the validator accepted it", name)
		}
	}
	broken("a $ref to nothing", func(d map[string]any) {
		d["paths"].(map[string]any)["/v1/exec"].(map[string]any)["post"].(map[string]any)["responses"].(map[string]any)["200"] = map[string]any{"$ref": "#/components/responses/nothing"}
	})
	broken("a path parameter not declared", func(d map[string]any) {
		d["paths"].(map[string]any)["/v1/tasks/{task_id}"].(map[string]any)["get"].(map[string]any)["parameters"] = []any{}
	})
	broken("no info", func(d map[string]any) { delete(d, "info") })
}

// TestOpenAPIEveryRouteTyped: a route added to the table must say what it
// takes and answers; the message tells the author what to set.
func TestOpenAPIEveryRouteTyped(t *testing.T) {
	s, _ := newTestServer(t)
	for _, rt := range s.routes {
		where := fmt.Sprintf("route %s (%s %s)", rt.Name, rt.Method, rt.Path)
		if rt.Response == nil {
			t.Errorf("%s has no Response: set Route.Response to the zero value of what its handler writes as data (or openapi.Raw{…} for a non-JSON answer); GET /v1/openapi.json is generated from it", where)
		}
		if isWrite(rt.Method) && rt.Request == nil {
			t.Errorf("%s has no Request: set Route.Request to the zero value of the type its handler decodes (or openapi.NoBody{} when it reads no body)", where)
		}
		if !isWrite(rt.Method) && rt.Request != nil {
			t.Errorf("%s is a %s with a Request type: reads take no body", where, rt.Method)
		}
		if rt.Raw {
			if _, ok := rt.Response.(openapi.Raw); !ok && rt.Response != nil {
				t.Errorf("%s is Raw (writes its own answer) but its Response is %T, not openapi.Raw", where, rt.Response)
			}
		}
	}
}

func TestOpenAPIEveryRouteServed(t *testing.T) {
	s, doc, _ := loadOpenAPI(t)
	served := servedRoutes(t, s, openapi.PathOf)
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	if len(served) < 40 {
		t.Fatalf("only %d routes served: the walk is broken", len(served))
	}
	for k := range served {
		if !documented[k] {
			t.Errorf("served but not in the document: %s", k)
		}
	}
	for k := range documented {
		if !served[k] {
			t.Errorf("in the document but not served: %s", k)
		}
	}
}

// TestOpenAPIAgreesWithDescribe compares /describe's routes with the
// document, route by route: the same routes, names, summaries and auth; the
// body fields describe lists are the properties the request type has (same
// JSON types, same required set); the query parameters are the same.
func TestOpenAPIAgreesWithDescribe(t *testing.T) {
	s, doc, _ := loadOpenAPI(t)
	ops := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[method+" "+path] = op
		}
	}
	described := 0
	for _, scope := range []string{ScopeDiscovery, ScopeBusiness, ScopeControl} {
		for _, d := range s.docs(func(rt Route) bool { return rt.Scope == scope }) {
			described++
			key := d.Method + " " + openapi.PathOf(strings.NewReplacer().Replace(muxPath(d.Path)))
			op := ops[key]
			if op == nil {
				t.Errorf("%s is described but not in the document", key)
				continue
			}
			if op.OperationID != d.Name || op.Summary != d.Summary {
				t.Errorf("%s: document says %q %q, describe %q %q", key, op.OperationID, op.Summary, d.Name, d.Summary)
			}
			if hasSec := op.Security != nil && len(*op.Security) > 0; hasSec != (d.Auth != "") {
				t.Errorf("%s: security in the document %v, auth in describe %q", key, hasSec, d.Auth)
			}
			checkQuery(t, key, d.Query, op)
			checkBody(t, key, d.Body, op)
		}
	}
	if described != len(s.routes) {
		t.Errorf("describe lists %d routes, the table has %d", described, len(s.routes))
	}
}

// muxPath turns describe's :name back into {name}.
func muxPath(p string) string {
	return regexp.MustCompile(`:([A-Za-z_]+)`).ReplaceAllString(p, "{$1}")
}

func checkQuery(t *testing.T, key string, fields []Field, op *openapi3.Operation) {
	t.Helper()
	want := map[string]string{}
	for _, f := range fields {
		want[f.Name] = f.Type
	}
	got := map[string]string{}
	for _, p := range op.Parameters {
		if p.Value.In == "query" {
			got[p.Value.Name] = p.Value.Schema.Value.Type.Slice()[0]
		}
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("%s: query in describe %v, in the document %v", key, want, got)
	}
}

func checkBody(t *testing.T, key string, fields []Field, op *openapi3.Operation) {
	t.Helper()
	if op.RequestBody == nil {
		if len(fields) > 0 {
			t.Errorf("%s: describe lists body fields %v, the document has no request body", key, fields)
		}
		return
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil {
		// A body that is not JSON (openapi.Raw: a snapshot file) has no
		// fields to agree on.
		if len(fields) > 0 {
			t.Errorf("%s: describe lists body fields %v, the document's body is not JSON", key, fields)
		}
		return
	}
	schema := media.Schema.Value
	if len(schema.Properties) == 0 {
		// A free-form body (the handler decodes a map): describe is its only
		// list of names; the document says object.
		if !schema.Type.Is("object") && !schema.Type.Includes("object") {
			t.Errorf("%s: free-form body is not an object: %v", key, schema.Type)
		}
		return
	}
	var wantNames, gotNames, wantReq []string
	for _, f := range fields {
		wantNames = append(wantNames, f.Name)
		if f.Required {
			wantReq = append(wantReq, f.Name)
		}
		p := schema.Properties[f.Name]
		if p == nil {
			continue
		}
		if f.Type != "any" && !schemaHasType(p.Value, f.Type) && !(f.Type == "number" && schemaHasType(p.Value, "integer")) {
			t.Errorf("%s: field %s is %s in describe, %v in the document (the handler's type)", key, f.Name, f.Type, p.Value.Type.Slice())
		}
	}
	for name := range schema.Properties {
		gotNames = append(gotNames, name)
	}
	sort.Strings(wantNames)
	sort.Strings(gotNames)
	sort.Strings(wantReq)
	got := append([]string(nil), schema.Required...)
	sort.Strings(got)
	if strings.Join(wantNames, ",") != strings.Join(gotNames, ",") {
		t.Errorf("%s: body fields in describe %v, in the handler's request type %v", key, wantNames, gotNames)
	}
	if strings.Join(wantReq, ",") != strings.Join(got, ",") {
		t.Errorf("%s: required in describe %v, in the document %v", key, wantReq, got)
	}
}

// exampleFence is the docs' convention for a request example: a fenced
// block whose info string is `json METHOD /path`, e.g. ```json POST /v1/exec
// (renderers take the first word, json, as the language).
var exampleFence = regexp.MustCompile("(?m)^```json (GET|POST|PUT|PATCH|DELETE) (/\\S*)\\s*\\n((?s:.*?))\\n```")

type docExample struct {
	file, method, path string
	body               string
}

func docExamples(t *testing.T) []docExample {
	t.Helper()
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	var out []docExample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range exampleFence.FindAllStringSubmatch(string(b), -1) {
			out = append(out, docExample{file: filepath.Base(f), method: m[1], path: m[2], body: m[3]})
		}
	}
	return out
}

// findOperation matches a concrete path against the document's templates.
func findOperation(doc *openapi3.T, method, path string) *openapi3.Operation {
	for tpl, item := range doc.Paths.Map() {
		re := "^" + regexp.MustCompile(`\\\{[^/]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tpl), `[^/]+`) + "$"
		if regexp.MustCompile(re).MatchString(path) {
			if op := item.GetOperation(method); op != nil {
				return op
			}
		}
	}
	return nil
}

func TestOpenAPIDocExamplesValidate(t *testing.T) {
	_, doc, _ := loadOpenAPI(t)
	examples := docExamples(t)
	if len(examples) < 10 {
		t.Fatalf("found %d request examples in docs/ (```json METHOD /path fences); the convention is broken or they were removed", len(examples))
	}
	for _, ex := range examples {
		where := fmt.Sprintf("%s: %s %s", ex.file, ex.method, ex.path)
		op := findOperation(doc, ex.method, ex.path)
		if op == nil {
			t.Errorf("%s: no such route in the document", where)
			continue
		}
		if op.RequestBody == nil {
			t.Errorf("%s: the route takes no body, the example shows one", where)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(ex.body), &v); err != nil {
			t.Errorf("%s: not JSON: %v", where, err)
			continue
		}
		media := op.RequestBody.Value.Content.Get("application/json")
		if media == nil {
			t.Errorf("%s: the route's body is not JSON, the example shows JSON", where)
			continue
		}
		schema := media.Schema.Value
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: does not validate against the request schema: %v", where, err)
		}
		// And the same schema refuses a field the handler would refuse.
		if obj, ok := v.(map[string]any); ok && len(schema.Properties) > 0 {
			obj["no_such_field_x"] = 1
			if schema.VisitJSON(obj, openapi3.EnableJSONSchema2020()) == nil {
				t.Errorf("%s: the schema accepts an unknown field, the handler answers 422 unknown_field", where)
			}
		}
	}
}

// schemaHasType: the schema's type, or one of its anyOf alternatives' (a
// nullable struct is anyOf [its $ref, null]), includes typ.
func schemaHasType(s *openapi3.Schema, typ string) bool {
	if s.Type.Includes(typ) {
		return true
	}
	for _, alt := range s.AnyOf {
		if alt.Value != nil && alt.Value.Type.Includes(typ) {
			return true
		}
	}
	return false
}

// freeFormAnswers are the routes whose answer the document may give as an
// object without properties, each with why. Nothing else may: a route that
// answers a map[string]any is documented as a bare object, which tells a
// client nothing, so its handler must build a struct (the document is
// generated from the type the handler encodes).
var freeFormAnswers = map[string]string{
	// agentproxy.Forward relays agentd's answer byte for byte; its shape is
	// agentd's (workers/agentd), not the supervisor's.
	"agent.sessions": "agentd's answer, relayed as is",
	"agent.session":  "agentd's answer, relayed as is",
	"agent.create":   "agentd's answer, relayed as is",
	"agent.turn":     "agentd's answer, relayed as is",
	// Being retyped with paging by the list-paging change (issue of
	// /v1/tasks and /v1/renewal/conversations pages); remove when it lands.
	"tasks.list":            "retyped by the paging change",
	"renewal.conversations": "retyped by the paging change",
}

// Every JSON answer's data is a typed schema: an object has properties (or
// typed additionalProperties), unless freeFormAnswers says why not; and no
// route listed there has become typed meanwhile (the list stays honest).
func TestOpenAPIEveryAnswerHasProperties(t *testing.T) {
	s, _, raw := loadOpenAPI(t)
	schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
	resolve := func(sc map[string]any) map[string]any {
		for i := 0; i < 8; i++ {
			ref, ok := sc["$ref"].(string)
			if !ok {
				return sc
			}
			sc = schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		}
		return sc
	}
	paths := raw["paths"].(map[string]any)
	checked := 0
	for _, rt := range s.routes {
		op, _ := paths[openapi.PathOf(rt.Path)].(map[string]any)[strings.ToLower(rt.Method)].(map[string]any)
		if op == nil {
			t.Errorf("%s: not in the document", rt.Name)
			continue
		}
		var data map[string]any
		for code, resp := range op["responses"].(map[string]any) {
			if code != "200" {
				continue
			}
			content, _ := resp.(map[string]any)["content"].(map[string]any)
			js, _ := content["application/json"].(map[string]any)
			if js == nil {
				continue
			}
			env := resolve(js["schema"].(map[string]any))
			props, _ := env["properties"].(map[string]any)
			if d, ok := props["data"].(map[string]any); ok && rt.Name != "openapi" {
				data = resolve(d)
			}
		}
		if data == nil {
			continue // not a JSON envelope (openapi.Raw)
		}
		checked++
		bare := isBareObject(data)
		why, allowed := freeFormAnswers[rt.Name]
		switch {
		case bare && !allowed:
			t.Errorf("route %s (%s %s) answers data as an object without properties: have its handler encode a struct and set Route.Response to it (or, if truly free-form, list it in freeFormAnswers with why)", rt.Name, rt.Method, rt.Path)
		case !bare && allowed:
			t.Errorf("route %s is typed now; remove it from freeFormAnswers (%q)", rt.Name, why)
		}
	}
	if checked < 40 {
		t.Fatalf("checked only %d routes' answers", checked)
	}
}

// isBareObject: an object schema that names no property and whose extra
// properties are untyped (a map[string]any, an interface).
func isBareObject(sc map[string]any) bool {
	if len(sc) == 0 {
		return true // any value at all
	}
	isObject := sc["type"] == "object"
	if types, ok := sc["type"].([]any); ok {
		for _, ty := range types {
			isObject = isObject || ty == "object"
		}
	}
	if !isObject {
		return false
	}
	if props, ok := sc["properties"].(map[string]any); ok && len(props) > 0 {
		return false
	}
	extra, ok := sc["additionalProperties"].(map[string]any)
	return !ok || len(extra) == 0
}
