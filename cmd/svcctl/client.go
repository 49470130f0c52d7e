package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// client is svcctl's HTTP client for one daemon.
type client struct {
	base   string
	token  string
	getenv func(string) string
	out    io.Writer
	http   *http.Client
}

func newClient(base, token string, getenv func(string) string, out io.Writer) *client {
	return &client{base: strings.TrimRight(base, "/"), token: token, getenv: getenv, out: out, http: &http.Client{}}
}

// bearer finds the shared token: -token, SVC_SHARED_TOKEN, or the token file
// a default daemon writes to ./data/shared_token.
func (c *client) bearer() string {
	if c.token != "" {
		return c.token
	}
	if t := c.getenv("SVC_SHARED_TOKEN"); t != "" {
		return t
	}
	if b, err := os.ReadFile("data/shared_token"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// call sends one request and prints the JSON answer indented. A non-2xx
// answer prints the error body and returns an error, so the exit code says it.
func (c *client) call(ctx context.Context, method, path string, body any, auth bool) (json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		if t := c.bearer(); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("daemon at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	c.print(raw)
	if resp.StatusCode/100 != 2 {
		return raw, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return raw, nil
}

func (c *client) print(raw []byte) {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") == nil {
		buf.WriteByte('\n')
		_, _ = c.out.Write(buf.Bytes())
		return
	}
	_, _ = c.out.Write(raw)
}
