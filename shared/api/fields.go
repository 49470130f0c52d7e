package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// checkFieldNames refuses a top-level body field that dst (a pointer to a
// struct) does not declare, comparing names exactly. encoding/json matches
// names case-insensitively, and SPEC.md's names are case-sensitive
// (timeoutMs, requestId, client_id), so the check is done here. Bodies that
// are not JSON objects, and destinations that are not structs, are left to
// the decoder.
func checkFieldNames(body []byte, dst any) error {
	t := reflect.TypeOf(dst)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil // malformed: the decoder says how
	}
	known := fieldNames(t.Elem())
	var unknown []string
	for name := range fields {
		if _, ok := known[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	return Unprocessable("unknown_field", "unknown field %s; this route takes %s (names are case-sensitive)",
		quoteList(unknown), strings.Join(names, ", ")).
		WithDetails(map[string]any{"unknown_fields": unknown, "known_fields": names})
}

// fieldNames is the set of JSON names a struct decodes, embedded structs
// included.
func fieldNames(t reflect.Type) map[string]struct{} {
	out := map[string]struct{}{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n := range fieldNames(ft) {
					out[n] = struct{}{}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = struct{}{}
	}
	return out
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		if len(n) > 64 {
			n = n[:64] + "…"
		}
		q[i] = `"` + n + `"`
	}
	return strings.Join(q, ", ")
}
