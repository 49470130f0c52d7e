package bridge

import (
	"crypto/sha256"
	"crypto/subtle"
)

// tokenEqual compares in constant time; hashing first hides the length too.
func tokenEqual(given, want string) bool {
	if want == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
