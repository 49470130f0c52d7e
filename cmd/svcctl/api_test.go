package main

import (
	"encoding/json"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// svcctl api prints the daemon's OpenAPI document, which names the routes
// this very command uses.
func TestAPICommand(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	code, out, errOut := svcctlJSON(t, d, "api")
	if code != 0 {
		t.Fatalf("api: exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if doc.OpenAPI != "3.1.0" || doc.Paths["/v1/openapi.json"]["get"] == nil || doc.Paths["/v1/exec"]["post"] == nil {
		t.Fatalf("openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
	if code, _, _ := svcctlJSON(t, d, "api", "extra"); code != 2 {
		t.Fatalf("api with an argument: exit %d, want 2 (usage)", code)
	}
}
