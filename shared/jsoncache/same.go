package jsoncache

import (
	"slices"
	"time"
)

// Helpers for Same functions: parts compared as they encode.

// SameSlice: equal elements, and nil apart from empty (null vs []).
func SameSlice[S ~[]E, E comparable](a, b S) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// SameTime compares two optional times with ==, so the same instant in
// another location is not the Same (it may encode apart).
func SameTime(a, b *time.Time) bool { return a == b || a != nil && b != nil && *a == *b }

// CloneTime is a copy of an optional time.
func CloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
