package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/svcd/svcd/supervisor/config"
)

// client is svcctl's HTTP client for one daemon.
type client struct {
	base       string
	token      string
	dataDir    string // where the daemon keeps its token file (flag)
	configFile string // the daemon's HCL config (flag)
	getenv     func(string) string
	out        io.Writer
	errOut     io.Writer // svcctl's stderr: exec's remote stderr and notes
	format     string    // "human" (default) or "json": the raw envelope
	source     string    // where the token sent was found, for a 401's message
	http       *http.Client
}

func newClient(base, token string, getenv func(string) string, out io.Writer) *client {
	return &client{base: strings.TrimRight(base, "/"), token: token, getenv: getenv, out: out, errOut: io.Discard, format: formatHuman, http: &http.Client{}}
}

// bearer finds the shared token the way the daemon does: -token, then
// SVC_SHARED_TOKEN or shared_token in the config file (SVC_CONFIG or
// -config), then the token file in the data dir (-data-dir, SVC_DATA_DIR,
// data_dir in the config file, default ./data). When none is found the
// error lists every place it looked.
func (c *client) bearer() (string, error) {
	if c.token != "" {
		c.source = "the -token flag"
		return c.token, nil
	}
	var args []string
	if c.configFile != "" {
		args = append(args, "-config", c.configFile)
	}
	if c.dataDir != "" {
		args = append(args, "-data-dir", c.dataDir)
	}
	cfg, err := config.Load("svcctl", args, c.getenv)
	if err != nil {
		return "", fmt.Errorf("read the daemon configuration to find the token: %w", err)
	}
	t, src, err := cfg.LocateToken()
	c.source = string(src)
	var nf *config.TokenNotFoundError
	if errors.As(err, &nf) {
		return "", fmt.Errorf("no shared token found; looked at: -token flag (not given); %s. Pass -token, set SVC_SHARED_TOKEN, or point -data-dir / SVC_DATA_DIR at the daemon's data dir",
			strings.Join(nf.Tried, "; "))
	}
	return t, err
}

// authorize sets the token on every call it can be found for, not only
// those that need it under SPEC.md: a daemon with require_token = "writes"
// or "all" demands it on more routes. need says this call cannot do without
// it, so a missing token is svcctl's error, not the daemon's.
func (c *client) authorize(req *http.Request, need bool) error {
	t, err := c.bearer()
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+t)
		return nil
	}
	if need {
		return err
	}
	return nil
}

// call sends one request and prints the answer (print). A non-2xx answer
// returns an error saying the daemon's code and message, so the exit code
// says it.
func (c *client) call(ctx context.Context, method, path string, body any, auth bool) (json.RawMessage, error) {
	raw, resp, err := c.send(ctx, method, path, body, auth)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return raw, c.failure(method, path, resp, raw)
	}
	c.print(raw)
	return raw, nil
}

// sendOnce sends one request and reads the whole answer without printing
// it (send, retry.go, asks again when the daemon says to).
func (c *client) sendOnce(ctx context.Context, method, path string, body any, auth bool) ([]byte, *http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := c.authorize(req, auth); err != nil {
		return nil, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return raw, resp, nil
}

// print shows a JSON answer: the envelope indented under -format=json,
// otherwise rendered for people (human.go).
func (c *client) print(raw []byte) {
	if c.format != formatJSON {
		if err := renderHuman(c.out, raw, time.Now()); err == nil {
			return
		}
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") == nil {
		buf.WriteByte('\n')
		_, _ = c.out.Write(buf.Bytes())
		return
	}
	_, _ = c.out.Write(raw)
}
