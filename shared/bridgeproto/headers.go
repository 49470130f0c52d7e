package bridgeproto

import "strings"

// safeHeaders are the response headers a relayed answer may carry back to
// the HTTP caller. Everything else (Set-Cookie, Authorization, tokens, custom
// x- headers that platforms use for session state) is dropped: the relay
// returns what the platform said, not who the browser is.
var safeHeaders = map[string]bool{
	"content-type":          true,
	"content-language":      true,
	"content-encoding":      false, // the page already decoded the body
	"cache-control":         true,
	"date":                  true,
	"etag":                  true,
	"expires":               true,
	"last-modified":         true,
	"retry-after":           true,
	"x-ratelimit-limit":     true,
	"x-ratelimit-remaining": true,
	"x-ratelimit-reset":     true,
}

// SafeHeaders returns the allow-listed subset of h with lower-case names.
func SafeHeaders(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		k = strings.ToLower(k)
		if safeHeaders[k] {
			out[k] = v
		}
	}
	return out
}

// HeaderNames returns the lower-case names of h, for logs and diagnostics.
func HeaderNames(h map[string]string) []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, strings.ToLower(k))
	}
	return out
}
