package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DefaultMaxBody is the request body cap used when a route sets none (1 MiB).
const DefaultMaxBody int64 = 1 << 20

// DecodeJSON reads one JSON object from r's body into dst.
//
// The body must be a single JSON value. It maps failures onto the statuses
// DESIGN.md fixes: 413 body_too_large, 400 malformed_json, 422 invalid_field
// for a field of the wrong type, 422 unknown_field for a name dst does not
// have (matched exactly, case included: a typo such as timeout_ms for
// timeoutMs must not pass silently). Routes that take free-form options
// decode into a map, which knows every name. An empty body decodes as {} so
// optional-only routes work with no body at all.
func DecodeJSON(r *http.Request, dst any, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return NewError(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", mbe.Limit)
		}
		return BadRequest("body_unreadable", "could not read request body: %v", err)
	}
	if int64(len(body)) > maxBytes {
		return NewError(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", maxBytes)
	}
	return DecodeBytes(body, dst)
}

// DecodeBytes applies DecodeJSON's rules to an already read body.
func DecodeBytes(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := checkFieldNames(body, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			field := typeErr.Field
			if field == "" {
				return BadRequest("malformed_json", "request body must be a JSON object, got %s", typeErr.Value)
			}
			return Unprocessable("invalid_field", "field %q must be %s, got %s", field, describeKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			// Only nested objects get here; the top level was checked above.
			return Unprocessable("unknown_field", "unknown field %s in a nested object", name)
		}
		return BadRequest("malformed_json", "request body is not valid JSON: %v", err)
	}
	if dec.More() {
		return BadRequest("malformed_json", "request body must hold exactly one JSON value")
	}
	var rest json.RawMessage
	if err := dec.Decode(&rest); err != io.EOF {
		return BadRequest("malformed_json", "request body must hold exactly one JSON value")
	}
	return nil
}

func describeKind(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		// Also what a fraction or an out-of-range number (1e20) gets.
		return "a whole number in range"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "slice":
		return "an array"
	case kind == "map", kind == "struct":
		return "an object"
	}
	return fmt.Sprintf("of type %s", kind)
}
