// Package api holds the JSON wire conventions every svcd HTTP surface shares:
// the success envelope, the error body and strict request decoding.
package api

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Envelope is the common success body: {"ok":true,"data":…}.
type Envelope struct {
	OK   bool `json:"ok"`
	Data any  `json:"data"`
}

// ErrorBody is the common failure body: {"ok":false,"error":{"code","message"}}.
type ErrorBody struct {
	OK    bool       `json:"ok"`
	Error ErrorField `json:"error"`
}

// ErrorField carries a stable snake_case code and a human-readable message.
// Details holds optional machine-readable extras (for example retry_after_ms).
type ErrorField struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// WriteJSON writes v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteOK writes the success envelope around data with status 200.
func WriteOK(w http.ResponseWriter, data any) {
	WriteJSON(w, http.StatusOK, Envelope{OK: true, Data: data})
}

// AppendJSON appends v encoded as WriteJSON encodes it, without the
// trailing newline: the bytes a value has inside any body this package
// writes (lists that keep their entries' encodings: shared/jsoncache).
func AppendJSON(dst []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// OKBody starts a body for WriteOKBody: WriteOK's envelope up to its
// data, with room for n bytes more. Append one compact JSON value (the
// data, with AppendJSON and literal JSON) to it.
func OKBody(n int) []byte {
	return append(make([]byte, 0, len(okPrefix)+n+len(okSuffix)), okPrefix...)
}

// WriteOKBody ends and writes a body OKBody started: the same bytes
// WriteOK writes for the value appended to it. The value is not checked.
// The data is not copied again (a list page is tens of KB).
func WriteOKBody(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, okSuffix...))
}

// The envelope WriteOK writes around its data (Envelope's fields in order).
const (
	okPrefix = `{"ok":true,"data":`
	okSuffix = "}\n"
)

// WriteError writes err as the common error body. Any error that is not an
// *Error becomes a 500 internal_error whose message is the error text.
func WriteError(w http.ResponseWriter, err error) {
	e := AsError(err)
	WriteJSON(w, e.Status, ErrorBody{OK: false, Error: ErrorField{Code: e.Code, Message: e.Message, Details: e.Details}})
}
