// Package pagecursor is the one codec of the list routes' next_cursor
// (GET /v1/renewal/conversations, GET /v1/browser): a cursor names the last
// item of a page by the fields of the list's order, and clients hand it
// back as it is. It is opaque to them (base64url), and Decode accepts only
// what Encode makes, so a cursor that is not one is a clear 422 rather than
// a page from nowhere.
package pagecursor

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// MaxLen bounds a cursor as clients send it back.
const MaxLen = 4096

// Encode makes a cursor of parts (each "<byte length>:<bytes>", so a part
// may hold any byte).
func Encode(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(b.String()))
}

// Decode reads a cursor of exactly n parts; false if s is not one.
func Decode(s string, n int) ([]string, bool) {
	if len(s) > MaxLen {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	// The decoder skips \r and \n: only Encode's own spelling is a cursor.
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != s {
		return nil, false
	}
	rest := string(raw)
	parts := make([]string, 0, n)
	for len(parts) < n {
		size, tail, ok := strings.Cut(rest, ":")
		if !ok {
			return nil, false
		}
		l, err := strconv.Atoi(size)
		if err != nil || l < 0 || strconv.Itoa(l) != size || l > len(tail) {
			return nil, false
		}
		parts, rest = append(parts, tail[:l]), tail[l:]
	}
	if rest != "" {
		return nil, false
	}
	return parts, true
}
