package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/svcd/svcd/shared/api"
)

// readRetryFor bounds how long svcctl asks a read again: a node still not
// current after it is worth the operator's attention, so svcctl then shows
// its 503.
const readRetryFor = 15 * time.Second

// send sends one request and reads the whole answer without printing it.
// A read the daemon could not answer yet — a GET of /v1/... refused 503
// catching_up (the node has not applied the read index within its wait) or
// starting (still opening its store), with Retry-After — is asked again
// after the wait it names, as docs/ha.md "What a client should retry" says
// a client should, for at most readRetryFor; each wait is noted on stderr.
// Writes are never repeated: their outcome after a 503 may be unknown.
func (c *client) send(ctx context.Context, method, path string, body any, auth bool) ([]byte, *http.Response, error) {
	deadline := time.Now().Add(readRetryFor)
	for {
		raw, resp, err := c.sendOnce(ctx, method, path, body, auth)
		if err != nil {
			return raw, resp, err
		}
		wait, code, again := api.NotCurrentYet(method, path, resp.StatusCode, resp.Header, raw)
		if !again || time.Now().Add(wait).After(deadline) {
			return raw, resp, err
		}
		fmt.Fprintf(c.errOut, "svcctl: %s %s: the daemon answered %s; asking again in %s\n", method, path, code, wait)
		select {
		case <-ctx.Done():
			return raw, resp, nil
		case <-time.After(wait):
		}
	}
}
