package main

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// failure turns a non-2xx answer into svcctl's error. Under -format=json the
// body goes to stdout as it came, for scripts; for people the error says the
// daemon's code and message, and a 401 says which token svcctl sent and from
// where, since "wrong bearer token" alone does not tell which of four places
// to fix.
func (c *client) failure(method, path string, resp *http.Response, raw []byte) error {
	if c.format == formatJSON {
		c.print(raw)
	}
	msg := fmt.Sprintf("%s %s: %s", method, path, resp.Status)
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error.Code != "" {
		msg += ": " + env.Error.Code + ": " + env.Error.Message
	}
	if resp.StatusCode == http.StatusUnauthorized {
		msg += "\n" + c.tokenHint()
	}
	return fmt.Errorf("%s", msg)
}

// tokenHint names the source of the token svcctl sent and how to find the
// one the daemon it reached uses (the daemon does not say where it keeps it).
func (c *client) tokenHint() string {
	sent := "svcctl sent no token: none was found (pass -token, set SVC_SHARED_TOKEN, or point -config / -data-dir / SVC_DATA_DIR at the daemon's)"
	if c.source != "" {
		sent = "svcctl sent the token from " + c.source + "; it is not the one the daemon at " + c.base + " uses"
	}
	return "  " + sent + ".\n" +
		"  The daemon takes its token from SVC_SHARED_TOKEN, shared_token in its config file, or <its data dir>/shared_token;\n" +
		"  its command line (-data-dir, -config) or its environment (SVC_DATA_DIR, SVC_CONFIG) says which: e.g. ps -o args= -C svcd.\n" +
		"  Then run svcctl with the same -data-dir / -config, or -token."
}
