package hostops

import (
	"strings"
	"unicode/utf8"
)

// OutputText turns command output into a JSON-safe string. Valid UTF-8 is
// returned as is. When output was cut at the cap, an incomplete sequence at
// the very end is dropped first (the cut is not the command's fault). Any
// other invalid byte becomes U+FFFD and lossy is true, so the caller can add
// the exact bytes in base64.
func OutputText(b []byte, truncated bool) (text string, lossy bool) {
	if truncated {
		b = trimPartialRune(b)
	}
	if utf8.Valid(b) {
		return string(b), false
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), true
}

// trimPartialRune drops a truncated multi-byte sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	// A UTF-8 sequence is at most 4 bytes: look back at most 3.
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return b // ASCII: nothing partial
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
