// Package reqid carries a request's id from the HTTP front door through
// every log line written while serving it, into the workers over gRPC
// metadata and into their log lines, so one grep follows a request across
// processes.
package reqid

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"

	"github.com/hashicorp/go-hclog"
)

// Header is the HTTP header that carries the id, both ways.
const Header = "X-Request-Id"

// MetadataKey is the gRPC metadata key that carries it to a worker.
const MetadataKey = "x-request-id"

// LogKey is the field every log line about the request carries.
const LogKey = "request_id"

// MaxLen bounds an id a caller sends: long enough for a UUID, a trace id or
// a prefixed one, short enough that it cannot bloat every log line.
const MaxLen = 64

// Valid reports whether id may be taken from a caller and written into logs
// as is: 1 to MaxLen bytes of [A-Za-z0-9._:-]. Nothing else passes: no
// spaces, quotes, control characters or newlines (a forged log line), no
// non-ASCII.
func Valid(id string) bool {
	if len(id) == 0 || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// New returns 16 hex digits from the runtime's ChaCha8 generator (seeded
// from the OS, no system call per id): unique enough to find a request in
// the logs.
func New() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// Accept returns the caller's id when it is Valid, otherwise a new one.
func Accept(given string) string {
	if Valid(given) {
		return given
	}
	return New()
}

type ctxKey struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the id ctx carries, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// Logger returns base with the request id of ctx as LogKey, or base itself
// outside a request. Code on a request's path logs through it.
func Logger(ctx context.Context, base hclog.Logger) hclog.Logger {
	if id := From(ctx); id != "" {
		return base.With(LogKey, id)
	}
	return base
}
