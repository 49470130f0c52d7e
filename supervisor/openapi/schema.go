// Package openapi builds svcd's OpenAPI 3.1 document from Go values: the
// request and answer types the handlers decode and encode. Schemas come from
// reflection over the types' json tags (the rules encoding/json follows), so
// the document describes what the code really reads and writes rather than a
// hand-kept copy.
package openapi

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/svcd/svcd/shared/api"
)

// Schema is one JSON Schema (2020-12, as OpenAPI 3.1 uses) as a JSON object.
type Schema = map[string]any

// Schemas turns Go types into schemas. Named struct types become entries of
// components.schemas and are referred to by $ref, so a type used by many
// routes is written once and recursive types terminate.
type Schemas struct {
	defs map[string]Schema
	keys map[reflect.Type]string
}

// NewSchemas returns an empty set of component schemas.
func NewSchemas() *Schemas {
	return &Schemas{defs: map[string]Schema{}, keys: map[reflect.Type]string{}}
}

// Components returns components.schemas: every named type seen so far.
func (g *Schemas) Components() map[string]Schema { return g.defs }

var (
	timeType          = reflect.TypeFor[time.Time]()
	durationType      = reflect.TypeFor[time.Duration]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// Of returns the schema of values of v's type (v may be a typed nil pointer).
// A nil v is any JSON value. An interface field of a struct v that holds a
// value is described by that value's type: hostopsOutcome{Result:
// execResult{}} says what exec's data.result is, where the type alone (any)
// says nothing; such a struct is written in place, not as a component.
func (g *Schemas) Of(v any) Schema {
	if v == nil {
		return Schema{}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Struct && filledInterfaces(rv) {
		s := g.object(rv.Type())
		props := s["properties"].(Schema)
		for i := 0; i < rv.NumField(); i++ {
			f := rv.Type().Field(i)
			if f.Type.Kind() != reflect.Interface || rv.Field(i).IsNil() || !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			props[name] = g.Of(rv.Field(i).Interface())
		}
		return s
	}
	return g.schema(rv.Type())
}

func filledInterfaces(rv reflect.Value) bool {
	for i := 0; i < rv.NumField(); i++ {
		if rv.Field(i).Kind() == reflect.Interface && !rv.Field(i).IsNil() {
			return true
		}
	}
	return false
}

// Inline returns the schema of a struct type's value written out in place
// (not a $ref), so the caller can add required names and close it.
func (g *Schemas) Inline(v any) Schema {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || isOpaque(t) {
		return g.schema(t)
	}
	return g.object(t)
}

func (g *Schemas) schema(t reflect.Type) Schema {
	switch t {
	case timeType:
		return Schema{"type": "string", "format": "date-time"}
	case durationType:
		return Schema{"type": "integer", "description": "nanoseconds"}
	case rawMessageType:
		return Schema{}
	case numberType:
		return Schema{"type": "number"}
	}
	if t.Kind() == reflect.Pointer {
		return nullable(g.schema(t.Elem()))
	}
	// A type with its own JSON form: its shape is not its Go fields.
	if t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType) {
		return Schema{}
	}
	if t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return Schema{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return Schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return Schema{"type": "number"}
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return Schema{"type": "string", "contentEncoding": "base64"}
		}
		// encoding/json writes a nil slice as null.
		return Schema{"type": []any{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Array:
		return Schema{"type": "array", "items": g.schema(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		return Schema{"type": []any{"object", "null"}, "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return Schema{}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		key := g.key(t)
		if _, seen := g.defs[key]; !seen {
			g.defs[key] = Schema{} // placeholder: a recursive type refers to itself
			g.defs[key] = g.object(t)
		}
		return Schema{"$ref": "#/components/schemas/" + key}
	}
	// Channels, functions and complex numbers never reach encoding/json's
	// output without an error; describe them as anything rather than lie.
	return Schema{}
}

func isOpaque(t reflect.Type) bool {
	return t == timeType || t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType)
}

// key names a component after its package and type (systemstate.State);
// two types of the same name in one package path cannot exist, and two
// packages of the same last element get the full path.
func (g *Schemas) key(t reflect.Type) string {
	if k, ok := g.keys[t]; ok {
		return k
	}
	pkg := t.PkgPath()
	short := pkg[strings.LastIndex(pkg, "/")+1:]
	k := short + "." + t.Name()
	for other, key := range g.keys {
		if key == k && other != t {
			k = strings.ReplaceAll(pkg, "/", ".") + "." + t.Name()
			break
		}
	}
	g.keys[t] = k
	return k
}

// object is a struct's schema under encoding/json's rules: exported fields,
// the tag's name, "-" skipped, embedded structs without a tag flattened. A
// field without omitempty/omitzero is always written, so it is required.
func (g *Schemas) object(t reflect.Type) Schema {
	props := Schema{}
	var required []any
	g.fields(t, props, &required)
	s := Schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func (g *Schemas) fields(t reflect.Type, props Schema, required *[]any) {
	api.EachJSONField(t, func(f reflect.StructField, name, opts string) {
		fs := g.schema(f.Type)
		if hasOpt(opts, "string") {
			fs = Schema{"type": "string"}
		}
		props[name] = fs
		if !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero") {
			*required = append(*required, name)
		}
	})
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// nullable admits null besides s: a nil pointer is written as null.
func nullable(s Schema) Schema {
	switch typ := s["type"].(type) {
	case string:
		c := clone(s)
		c["type"] = []any{typ, "null"}
		return c
	case []any:
		for _, v := range typ {
			if v == "null" {
				return s
			}
		}
		c := clone(s)
		c["type"] = append(append([]any{}, typ...), "null")
		return c
	}
	if len(s) == 0 {
		return s // already anything
	}
	return Schema{"anyOf": []any{s, Schema{"type": "null"}}}
}

func clone(s Schema) Schema {
	c := make(Schema, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}
