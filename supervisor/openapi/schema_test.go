package openapi

import (
	"encoding/json"
	"testing"
	"time"
)

type inner struct {
	N int `json:"n"`
}

type Embedded struct {
	E string `json:"e"`
}

type sample struct {
	Embedded
	Name    string            `json:"name"`
	Opt     *string           `json:"opt,omitempty"`
	When    time.Time         `json:"when"`
	Tags    []string          `json:"tags"`
	Meta    map[string]string `json:"meta,omitempty"`
	In      inner             `json:"in"`
	Raw     json.RawMessage   `json:"raw"`
	Skip    string            `json:"-"`
	private int
	Self    *sample `json:"self,omitempty"`
}

func TestSchemaFollowsEncodingJSON(t *testing.T) {
	g := NewSchemas()
	ref := g.Of(sample{})
	if ref["$ref"] != "#/components/schemas/openapi.sample" {
		t.Fatalf("ref = %v", ref)
	}
	s := g.Components()["openapi.sample"]
	props := s["properties"].(Schema)
	for _, want := range []string{"e", "name", "opt", "when", "tags", "meta", "in", "raw", "self"} {
		if props[want] == nil {
			t.Errorf("no property %s in %v", want, props)
		}
	}
	for _, gone := range []string{"Skip", "-", "private", "Embedded"} {
		if props[gone] != nil {
			t.Errorf("property %s should not be there", gone)
		}
	}
	if got := props["when"].(Schema)["format"]; got != "date-time" {
		t.Errorf("time format = %v", got)
	}
	if got := props["opt"].(Schema)["type"].([]any); len(got) != 2 || got[1] != "null" {
		t.Errorf("pointer type = %v", got)
	}
	req := map[string]bool{}
	for _, r := range s["required"].([]any) {
		req[r.(string)] = true
	}
	if req["opt"] || req["meta"] || !req["name"] || !req["e"] {
		t.Errorf("required = %v", s["required"])
	}
	// The recursive field refers back to the component.
	if props["self"].(Schema)["anyOf"] == nil {
		t.Errorf("self = %v", props["self"])
	}
}

func TestPathOf(t *testing.T) {
	for in, want := range map[string]string{"/v1/x/{id:[0-9]+}/y": "/v1/x/{id}/y", "/a/{b}": "/a/{b}", "/plain": "/plain"} {
		if got := PathOf(in); got != want {
			t.Errorf("PathOf(%q) = %q, want %q", in, got, want)
		}
	}
}
