package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Token levels: which routes demand the shared token (require_token).
const (
	// RequireTokenHostOps is SPEC.md's contract: host operations, worker
	// restarts and cluster changes need the token; other routes do not.
	RequireTokenHostOps = "host-ops"
	// RequireTokenWrites also demands it on every state-changing route, so
	// no local process without the token can change the mode, a
	// conversation, or have a report typed into a chat.
	RequireTokenWrites = "writes"
	// RequireTokenAll demands it on every route but the probes and the
	// browser WebSocket (which pairs at hello); the read-only status wrapper
	// reads the daemon with the token and serves its views without one.
	RequireTokenAll = "all"
)

// RequireTokenLevels lists the accepted require_token values.
var requireTokenLevels = []string{RequireTokenHostOps, RequireTokenWrites, RequireTokenAll}

func (c Config) validateRequireToken() []error {
	for _, l := range requireTokenLevels {
		if c.RequireToken == l {
			return nil
		}
	}
	return []error{fmt.Errorf("require_token %q: want one of %s", c.RequireToken, strings.Join(requireTokenLevels, ", "))}
}

// TokenSource is where LocateToken found the shared token, said the way an
// operator would set it ("SVC_SHARED_TOKEN", "shared_token in FILE", the
// token file's path).
type TokenSource string

// LocateToken finds the shared token the way the daemon does, for clients
// on the same host (svcctl, the status wrapper): SVC_SHARED_TOKEN or
// shared_token in the config file, then the token file in the data dir.
// When none is found the error lists every place it looked.
func (c Config) LocateToken() (string, TokenSource, error) {
	if c.SharedToken != "" {
		if c.ConfigFile != "" && !c.sharedTokenFromEnv {
			return c.SharedToken, TokenSource("shared_token in " + c.ConfigFile), nil
		}
		return c.SharedToken, "SVC_SHARED_TOKEN", nil
	}
	tried := []string{"SVC_SHARED_TOKEN (unset)"}
	if c.ConfigFile != "" {
		tried = append(tried, "shared_token in "+c.ConfigFile+" (unset)")
	} else {
		tried = append(tried, "config file (none: set SVC_CONFIG or -config)")
	}
	path, err := c.TokenFile()
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), TokenSource(path), nil
	}
	reason := "empty"
	if err != nil {
		reason = err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			reason = "not found"
		}
	}
	tried = append(tried, path+" ("+reason+")")
	return "", "", &TokenNotFoundError{Tried: tried}
}

// TokenNotFoundError lists every place LocateToken looked.
type TokenNotFoundError struct{ Tried []string }

func (e *TokenNotFoundError) Error() string {
	return "no shared token found; looked at: " + strings.Join(e.Tried, "; ")
}
