package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// NotCurrentYet is the client's half of docs/ha.md "What a client should
// retry": whether an answer is a read to ask again, after how long, and its
// error code. It is one: a GET of the API (/v1/…; never /readyz, whose 503
// is the answer) refused 503 catching_up (the node has not applied the read
// index within its wait) or starting (still opening its store), with
// Retry-After. The wait is the error's retry_after_ms, else Retry-After,
// held between 50 ms and 1 s. Writes are never asked again: their outcome
// after a 503 may be unknown. svcctl and the e2e harness both follow it.
func NotCurrentYet(method, path string, status int, header http.Header, body []byte) (wait time.Duration, code string, again bool) {
	if method != http.MethodGet || status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" || !strings.HasPrefix(path, "/v1/") {
		return 0, "", false
	}
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Details struct {
				RetryAfterMs int64 `json:"retry_after_ms"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || (env.Error.Code != "catching_up" && env.Error.Code != "starting") {
		return 0, "", false
	}
	wait = time.Duration(env.Error.Details.RetryAfterMs) * time.Millisecond
	if wait <= 0 {
		if s, err := strconv.Atoi(header.Get("Retry-After")); err == nil {
			wait = time.Duration(s) * time.Second
		}
	}
	return min(max(wait, 50*time.Millisecond), time.Second), env.Error.Code, true
}
