package codexrpc_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/svcd/svcd/workers/agentd/codexrpc"
)

// schema is a small validator for the generated Codex JSON Schema: enough
// of draft-07 (type, enum, required, properties, additionalProperties,
// $ref, oneOf/anyOf, items) to check what agentd sends.
type schema struct {
	defs     map[string]any
	requests []any
	notes    []any
}

func loadSchema(t *testing.T) *schema {
	t.Helper()
	read := func(name string) map[string]any {
		b, err := os.ReadFile("testdata/schema/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	req := read("ClientRequest.json")
	not := read("ClientNotification.json")
	defs := req["definitions"].(map[string]any)
	if d, ok := not["definitions"].(map[string]any); ok {
		for k, v := range d {
			defs[k] = v
		}
	}
	return &schema{defs: defs, requests: req["oneOf"].([]any), notes: not["oneOf"].([]any)}
}

// validate accepts a request or notification that matches one branch, and an
// answer to a server request (id + result/error).
func (s *schema) validate(line []byte) error {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return err
	}
	if _, ok := m["method"]; !ok {
		if _, ok := m["id"]; ok {
			return nil // a response to the child's approval request
		}
		return fmt.Errorf("neither method nor id")
	}
	branches := s.requests
	if _, ok := m["id"]; !ok {
		branches = s.notes
		if m["params"] == nil {
			delete(m, "params")
		}
	}
	var last error
	for _, b := range branches {
		if err := s.check(b, m, "$"); err == nil {
			return nil
		} else if bm := b.(map[string]any); enumHas(bm, m["method"]) {
			last = err
		}
	}
	if last == nil {
		last = fmt.Errorf("method %v is not in the schema", m["method"])
	}
	return last
}

func enumHas(branch map[string]any, method any) bool {
	p, _ := branch["properties"].(map[string]any)
	meth, _ := p["method"].(map[string]any)
	e, _ := meth["enum"].([]any)
	for _, v := range e {
		if v == method {
			return true
		}
	}
	return false
}

func (s *schema) check(sc any, v any, path string) error {
	m, ok := sc.(map[string]any)
	if !ok {
		return nil // true schema
	}
	if ref, ok := m["$ref"].(string); ok {
		const p = "#/definitions/"
		return s.check(s.defs[ref[len(p):]], v, path)
	}
	if alts, ok := m["oneOf"].([]any); ok {
		if err := s.any(alts, v, path); err != nil {
			return err
		}
	}
	if alts, ok := m["anyOf"].([]any); ok {
		if err := s.any(alts, v, path); err != nil {
			return err
		}
	}
	if e, ok := m["enum"].([]any); ok {
		found := false
		for _, x := range e {
			if x == v {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: %v not in %v", path, v, e)
		}
	}
	if t, ok := m["type"]; ok && !typeOK(t, v) {
		return fmt.Errorf("%s: %v is not of type %v", path, v, t)
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := m["properties"].(map[string]any)
		for _, r := range asSlice(m["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: missing required %v", path, r)
			}
		}
		for k, x := range obj {
			ps, known := props[k]
			if !known {
				if m["additionalProperties"] == false || props != nil {
					return fmt.Errorf("%s: unknown field %q", path, k)
				}
				continue
			}
			if err := s.check(ps, x, path+"."+k); err != nil {
				return err
			}
		}
	}
	if arr, ok := v.([]any); ok {
		for i, x := range arr {
			if err := s.check(m["items"], x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *schema) any(alts []any, v any, path string) error {
	var first error
	for _, a := range alts {
		err := s.check(a, v, path)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return fmt.Errorf("%s matches no alternative (first: %v)", path, first)
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func typeOK(t any, v any) bool {
	for _, name := range append(asSlice(t), t) {
		switch name {
		case "object":
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case "array":
			if _, ok := v.([]any); ok {
				return true
			}
		case "string":
			if _, ok := v.(string); ok {
				return true
			}
		case "integer", "number":
			if _, ok := v.(float64); ok {
				return true
			}
		case "boolean":
			if _, ok := v.(bool); ok {
				return true
			}
		case "null":
			if v == nil {
				return true
			}
		}
	}
	return false
}

// TestSchemaRejects checks the validator is not a rubber stamp.
func TestSchemaRejects(t *testing.T) {
	v := loadSchema(t)
	good := `{"id":1,"method":"turn/start","params":{"threadId":"x","input":[{"type":"text","text":"hi"}]}}`
	if err := v.validate([]byte(good)); err != nil {
		t.Fatalf("good line refused: %v", err)
	}
	for _, bad := range []string{
		`{"id":1,"method":"turn/start","params":{"input":[]}}`,
		`{"id":1,"method":"turn/start","params":{"threadId":"x","input":[{"type":"text"}]}}`,
		`{"id":1,"method":"turn/run","params":{}}`,
		`{"id":1,"method":"turn/interrupt","params":{"threadId":"x","turnId":"y","bogus":1}}`,
	} {
		if err := v.validate([]byte(bad)); err == nil {
			t.Errorf("bad line accepted: %s", bad)
		}
	}
}

// TestApprovalAnswersMatchSchema: what agentd answers to approval requests,
// under either policy, is a valid response for both request kinds.
func TestApprovalAnswersMatchSchema(t *testing.T) {
	for _, file := range []string{"CommandExecutionRequestApprovalResponse.json", "FileChangeRequestApprovalResponse.json"} {
		b, err := os.ReadFile("testdata/schema/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var root map[string]any
		if err := json.Unmarshal(b, &root); err != nil {
			t.Fatal(err)
		}
		defs, _ := root["definitions"].(map[string]any)
		v := &schema{defs: defs}
		for _, policy := range []string{"decline", "accept", ""} {
			var answer any
			raw, _ := json.Marshal(codexrpc.ApprovalDecision(policy))
			_ = json.Unmarshal(raw, &answer)
			if err := v.check(root, answer, "$"); err != nil {
				t.Errorf("%s, policy %q: %v", file, policy, err)
			}
		}
		if err := v.check(root, map[string]any{"decision": "maybe"}, "$"); err == nil {
			t.Errorf("%s: the validator accepted a bogus decision", file)
		}
	}
}
