package bridgeproto

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// CredentialMeta is everything svcd keeps of a captured login: the header
// names, how many headers and cookies there were, and a SHA-256 fingerprint
// over the values. The fingerprint lets a reader see that a login changed
// without anyone being able to see (or replay) the login.
type CredentialMeta struct {
	HeaderNames []string `json:"header_names"`
	HeaderCount int      `json:"header_count"`
	CookieCount int      `json:"cookie_count"`
	Fingerprint string   `json:"credential_fingerprint"`
}

// Metadata reduces c to CredentialMeta. Names are lower-cased and sorted so
// the same login always gives the same fingerprint. Only what identifies the
// login is hashed: headers with a value (the extension sends the value of
// credential headers only, "" for the rest) and cookies. A header sent
// without a value is a name, counted and listed but not hashed: the
// extension's page-side capture sees only the headers the page's scripts
// set, its network capture also those the browser adds (user-agent,
// sec-ch-*…), and both must give the same fingerprint for the same login
// (issue 36, docs/extension.md "Header capture").
func (c *Credentials) Metadata() CredentialMeta {
	h := sha256.New()
	write := func(kind string, m map[string]string, lower bool) []string {
		names := make([]string, 0, len(m))
		vals := make(map[string]string, len(m))
		for k, v := range m {
			n := k
			if lower {
				n = strings.ToLower(k)
			}
			names = append(names, n)
			vals[n] = v
		}
		sort.Strings(names)
		for _, n := range names {
			if kind == "h" && vals[n] == "" {
				continue
			}
			// Length-prefixed fields keep "a=b"+"c" and "a"+"b=c" apart.
			h.Write([]byte(kind))
			writeLen(h, n)
			writeLen(h, vals[n])
		}
		return names
	}
	names := write("h", c.Headers, true)
	write("c", c.Cookies, false)
	return CredentialMeta{
		HeaderNames: names,
		HeaderCount: len(c.Headers),
		CookieCount: len(c.Cookies),
		Fingerprint: "sha256:" + hex.EncodeToString(h.Sum(nil)),
	}
}

func writeLen(h interface{ Write([]byte) (int, error) }, s string) {
	n := len(s)
	_, _ = h.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	_, _ = h.Write([]byte(s))
}

// Scrub drops every value from c, keeping nothing that could leak later.
func (c *Credentials) Scrub() {
	c.Headers = nil
	c.Cookies = nil
}
