package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"
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
	known := cachedFieldNames(t.Elem())
	if allKnown(body, known) {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil // malformed: the decoder says how
	}
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

// allKnown is the fast path of checkFieldNames (performance, issue 15: the
// relay route decodes a body per request): it walks the object's top-level
// keys without decoding any value and reports true when every key is in
// known as written. Anything else (an unknown or escaped key, a body it
// cannot walk) reports false and the full check decides, so a false here
// never changes an answer; on valid JSON the walk finds exactly the keys
// json.Unmarshal would.
func allKnown(body []byte, known map[string]struct{}) bool {
	depth, keyNext := 0, false
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			j := i + 1
			for j < len(body) && body[j] != '"' {
				if body[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(body) {
				return false
			}
			if depth == 1 && keyNext {
				if _, ok := known[string(body[i+1:j])]; !ok {
					return false
				}
				keyNext = false
			}
			i = j
		case '{':
			depth++
			keyNext = depth == 1
		case '[':
			if depth == 0 {
				return false
			}
			depth++
		case '}', ']':
			depth--
		case ',':
			keyNext = depth == 1
		}
	}
	return depth == 0
}

// fieldNamesCache holds fieldNames per struct type. It is derived from
// types alone, never changes once computed and is safe to share, like
// encoding/json's own per-type cache; it saves a reflect walk and a map per
// decoded request.
var fieldNamesCache sync.Map // reflect.Type -> map[string]struct{}

func cachedFieldNames(t reflect.Type) map[string]struct{} {
	if v, ok := fieldNamesCache.Load(t); ok {
		return v.(map[string]struct{})
	}
	v, _ := fieldNamesCache.LoadOrStore(t, fieldNames(t))
	return v.(map[string]struct{})
}

// fieldNames is the set of JSON names a struct decodes, embedded structs
// included.
func fieldNames(t reflect.Type) map[string]struct{} {
	out := map[string]struct{}{}
	EachJSONField(t, func(_ reflect.StructField, name, _ string) { out[name] = struct{}{} })
	return out
}

// EachJSONField calls fn, in field order, for every field encoding/json
// reads or writes on struct type t: with its JSON name and the tag's
// options ("omitempty,string" …). Fields tagged "-" and unexported ones are
// left out; an untagged embedded struct's fields count as t's own. The
// decoder's unknown-field check and the OpenAPI schemas both use it, so
// they agree on what a body's fields are.
func EachJSONField(t reflect.Type, fn func(f reflect.StructField, name, opts string)) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				EachJSONField(ft, fn)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fn(f, name, opts)
	}
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
