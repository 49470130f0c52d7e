package api

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is an API failure with its HTTP status and stable code. Handlers return
// it and WriteError renders it; nothing else decides a status.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// NewError builds an *Error with a formatted message.
func NewError(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e carrying extra machine-readable fields.
func (e *Error) WithDetails(d map[string]any) *Error {
	c := *e
	c.Details = d
	return &c
}

// AsError unwraps err into an *Error, or wraps it as a 500.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Code: "internal_error", Message: err.Error()}
}

// Constructors for the statuses DESIGN.md fixes, so codes stay consistent.

func BadRequest(code, format string, args ...any) *Error {
	return NewError(http.StatusBadRequest, code, format, args...)
}

func Unprocessable(code, format string, args ...any) *Error {
	return NewError(http.StatusUnprocessableEntity, code, format, args...)
}

func NotFound(code, format string, args ...any) *Error {
	return NewError(http.StatusNotFound, code, format, args...)
}

func Conflict(code, format string, args ...any) *Error {
	return NewError(http.StatusConflict, code, format, args...)
}

func Unavailable(code, format string, args ...any) *Error {
	return NewError(http.StatusServiceUnavailable, code, format, args...)
}

func Unauthorized(format string, args ...any) *Error {
	return NewError(http.StatusUnauthorized, "unauthorized", format, args...)
}

// Clip shortens a caller's value quoted back in an error message (64
// bytes and an ellipsis), so an answer never echoes a huge input whole.
func Clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
