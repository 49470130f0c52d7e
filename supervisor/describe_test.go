package supervisor

import (
	"encoding/json"
	"sort"
	"testing"
)

// TestDescribedRoutesAreServed checks the describe documents against the
// router itself: every served route is described (in /describe's discovery
// list or a scoped describe) and every described route is served.
func TestDescribedRoutesAreServed(t *testing.T) {
	s, hs := newTestServer(t)

	served := servedRoutes(t, s, describePath)

	described := map[string]bool{}
	collect := func(path, key string) {
		code, body := get(t, hs.URL+path)
		if code != 200 {
			t.Fatalf("GET %s = %d %s", path, code, body)
		}
		var env struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &env); err != nil {
			t.Fatal(err)
		}
		var docs []RouteDoc
		if err := json.Unmarshal(env.Data[key], &docs); err != nil {
			t.Fatalf("%s %s: %v", path, key, err)
		}
		for _, d := range docs {
			described[d.Method+" "+d.Path] = true
		}
	}
	collect("/describe", "discovery")
	collect("/describe/business", "routes")
	collect("/describe/control", "routes")

	var missing, phantom []string
	for k := range served {
		if !described[k] {
			missing = append(missing, k)
		}
	}
	for k := range described {
		if !served[k] {
			phantom = append(phantom, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(phantom)
	if len(missing) > 0 || len(phantom) > 0 {
		t.Fatalf("served but not described: %v\ndescribed but not served: %v", missing, phantom)
	}
	if len(served) < 15 {
		t.Fatalf("only %d routes served; the table lost routes", len(served))
	}

	// Capabilities partition the same table: every route appears exactly once.
	code, body := get(t, hs.URL+"/v1/capabilities")
	if code != 200 {
		t.Fatalf("capabilities %d", code)
	}
	var caps struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &caps); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, kind := range []string{KindRead, KindWrite, KindDiagnostic} {
		var docs []RouteDoc
		if err := json.Unmarshal(caps.Data[kind], &docs); err != nil {
			t.Fatalf("capabilities %s: %v", kind, err)
		}
		for _, d := range docs {
			seen[d.Method+" "+d.Path]++
		}
	}
	for k := range served {
		if seen[k] != 1 {
			t.Errorf("capabilities list %s %d times, want once", k, seen[k])
		}
	}
	if string(caps.Data["cautions"]) == "" || string(caps.Data["cautions"]) == "null" {
		t.Error("capabilities carry no cautions")
	}
}

func TestEveryRouteIsFullyDocumented(t *testing.T) {
	s, _ := newTestServer(t)
	names := map[string]bool{}
	for _, rt := range s.routes {
		if rt.Name == "" || rt.Summary == "" || rt.Area == "" || rt.Handle == nil {
			t.Errorf("%s %s: name, summary, area and handler are all required", rt.Method, rt.Path)
		}
		switch rt.Scope {
		case ScopeDiscovery, ScopeBusiness, ScopeControl:
		default:
			t.Errorf("%s %s: scope %q", rt.Method, rt.Path, rt.Scope)
		}
		switch rt.Kind {
		case KindRead, KindWrite, KindDiagnostic:
		default:
			t.Errorf("%s %s: kind %q", rt.Method, rt.Path, rt.Kind)
		}
		if names[rt.Name] {
			t.Errorf("route name %q used twice", rt.Name)
		}
		names[rt.Name] = true
	}
}
