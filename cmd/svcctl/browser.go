package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const browserUsage = "browser ls [filters] | request --platform P [--path /x|--prompt T] [--sse] … | action NAME [--platform P] [--client ID] [key=value…] | cancel --platform P --id ID | " + browserPairUsage

func runBrowser(ctx context.Context, c *client, args []string) error {
	if len(args) == 0 {
		return usageError("usage: svcctl " + browserUsage)
	}
	switch args[0] {
	case "ls":
		return browserLs(ctx, c, args[1:])
	case "request":
		return browserRequest(ctx, c, args[1:])
	case "action":
		return browserAction(ctx, c, args[1:])
	case "cancel":
		return browserCancel(ctx, c, args[1:])
	}
	if handled, err := runBrowserPairing(ctx, c, args[0], args[1:]); handled {
		return err
	}
	return usageError("browser: unknown subcommand " + args[0] + "; want ls, request, action, cancel, pair, clients, revoke, grant or revoke-scope")
}

// browserLs prints GET /v1/browser with its filters.
func browserLs(ctx context.Context, c *client, args []string) error {
	fs := newFlags("browser ls")
	names := []string{"platform", "account", "browser", "client_id", "host", "status"}
	vals := map[string]*string{}
	for _, n := range names {
		vals[n] = fs.String(n, "", "filter by "+n)
	}
	client := fs.String("client", "", "alias of -client_id")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageError(flagHint(fs, err) + "usage: svcctl browser ls [--platform P] [--account A] [--browser B] [--client ID] [--host H] [--status fresh|stale|lost]")
	}
	if *client != "" {
		*vals["client_id"] = *client
	}
	q := url.Values{}
	for _, n := range names {
		if v := *vals[n]; v != "" {
			q.Set(n, v)
		}
	}
	raw, err := browserAllPages(ctx, c, q)
	if err != nil {
		return err
	}
	c.print(raw)
	return nil
}

// browserAllPages reads GET /v1/browser with q and follows next_cursor,
// so ls shows every record: records and automation_conversations of later
// pages are appended to the first page's, policy.targets merged. A single
// page is returned as the daemon wrote it.
func browserAllPages(ctx context.Context, c *client, q url.Values) ([]byte, error) {
	get := func(q url.Values) ([]byte, map[string]any, error) {
		path := "/v1/browser"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		raw, resp, err := c.send(ctx, http.MethodGet, path, nil, false)
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode/100 != 2 {
			return nil, nil, c.failure(http.MethodGet, path, resp, raw)
		}
		var env map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&env); err != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", path, err)
		}
		data, _ := env["data"].(map[string]any)
		if data == nil {
			return nil, nil, fmt.Errorf("GET %s: no data in the answer", path)
		}
		return raw, env, nil
	}
	raw, env, err := get(q)
	if err != nil {
		return nil, err
	}
	first := env["data"].(map[string]any)
	next, _ := first["next_cursor"].(string)
	if next == "" {
		return raw, nil
	}
	targets := func(d map[string]any) map[string]any {
		p, _ := d["policy"].(map[string]any)
		t, _ := p["targets"].(map[string]any)
		return t
	}
	for pages := 1; next != ""; pages++ {
		if pages > 100000 {
			return nil, fmt.Errorf("GET /v1/browser: next_cursor did not end")
		}
		q.Set("cursor", next)
		_, page, err := get(q)
		if err != nil {
			return nil, err
		}
		d := page["data"].(map[string]any)
		for _, list := range []string{"records", "automation_conversations"} {
			more, _ := d[list].([]any)
			have, _ := first[list].([]any)
			first[list] = append(have, more...)
		}
		if all, more := targets(first), targets(d); all != nil {
			for k, v := range more {
				all[k] = v
			}
		}
		next, _ = d["next_cursor"].(string)
	}
	delete(first, "next_cursor")
	return json.Marshal(env)
}

// browserRequest relays one request; with --sse the events are printed as
// they arrive.
func browserRequest(ctx context.Context, c *client, args []string) error {
	fs := newFlags("browser request")
	platform := fs.String("platform", "", "platform_a, platform_b or platform_c")
	path := fs.String("path", "", "path on the platform host")
	prompt := fs.String("prompt", "", "platform_a completion prompt (without --path)")
	method := fs.String("method", "", "HTTP method")
	id := fs.String("id", "", "requestId (generated when empty)")
	clientID := fs.String("client", "", "pin one browser client")
	body := fs.String("body", "", "request body as JSON")
	sse := fs.Bool("sse", false, "stream the answer (responseMode sse)")
	timeout := fs.Int64("timeout-ms", 0, "how long to wait for the page")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *platform == "" {
		return usageError(flagHint(fs, err) + "usage: svcctl browser request --platform P [--path /x | --prompt TEXT] [--method M] [--body JSON] [--id ID] [--client ID] [--sse] [--timeout-ms N]")
	}
	req := map[string]any{"platform": *platform}
	set := func(k, v string) {
		if v != "" {
			req[k] = v
		}
	}
	set("path", *path)
	set("method", *method)
	set("requestId", *id)
	set("clientId", *clientID)
	if fs.Lookup("prompt") != nil && *prompt != "" {
		req["prompt"] = *prompt
	}
	if *body != "" {
		if !json.Valid([]byte(*body)) {
			return usageError("--body must be JSON")
		}
		req["body"] = json.RawMessage(*body)
	}
	if *timeout > 0 {
		req["timeoutMs"] = *timeout
	}
	if !*sse {
		_, err := c.call(ctx, http.MethodPost, "/v1/browser/request", req, false)
		return err
	}
	req["responseMode"] = "sse"
	return c.stream(ctx, "/v1/browser/request", req)
}

// stream posts body and prints an SSE answer one line per event (the
// eventPrinter), or under -format=json copies it line by line as it came; a
// JSON answer (an error before the stream) is printed like call does.
func (c *client) stream(ctx context.Context, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := c.authorize(req, false); err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("daemon at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		c.print(raw)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("POST %s: %s", path, resp.Status)
		}
		return nil
	}
	failed := false
	var ev *eventPrinter // -format=json: the SSE lines as they came
	if c.format != formatJSON {
		ev = newEventPrinter(c.out, time.Now)
	}
	err = readSSE(resp.Body, func(line string) {
		if ev == nil {
			fmt.Fprintln(c.out, line)
		}
	}, func(name string, data []byte) {
		if name == "stream_error" {
			failed = true
		}
		if ev != nil {
			_ = ev.Print(name, data)
		}
	})
	if err != nil {
		return err
	}
	if failed {
		return fmt.Errorf("stream ended with stream_error")
	}
	return nil
}

// browserAction sends a management action; key=value pairs become options
// (numbers when they parse as numbers).
func browserAction(ctx context.Context, c *client, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageError("usage: svcctl browser action NAME [--platform P] [--client ID] [key=value …]")
	}
	name := args[0]
	fs := newFlags("browser action")
	platform := fs.String("platform", "", "platform_a or platform_b")
	clientID := fs.String("client", "", "target client")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError(flagHint(fs, err) + "usage: svcctl browser action NAME [--platform P] [--client ID] [key=value …]")
	}
	body := map[string]any{"action": name}
	if *platform != "" {
		body["platform"] = *platform
	}
	if *clientID != "" {
		body["clientId"] = *clientID
	}
	for _, kv := range fs.Args() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageError("action options are key=value, got " + kv)
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			body[k] = n
		} else if b, err := strconv.ParseBool(v); err == nil {
			body[k] = b
		} else {
			body[k] = v
		}
	}
	_, err := c.call(ctx, http.MethodPost, "/v1/browser/actions", body, false)
	return err
}

func browserCancel(ctx context.Context, c *client, args []string) error {
	fs := newFlags("browser cancel")
	platform := fs.String("platform", "", "platform of the request")
	id := fs.String("id", "", "requestId")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *platform == "" || *id == "" {
		return usageError(flagHint(fs, err) + "usage: svcctl browser cancel --platform P --id REQUEST_ID")
	}
	_, err := c.call(ctx, http.MethodPost, "/v1/browser/request/cancel", map[string]string{"platform": *platform, "requestId": *id}, false)
	return err
}

// readSSE reads Server-Sent Events: every line goes to line (as it came),
// and each event, at its blank line, to event with its name ("message"
// when it has none) and its data lines joined by newlines.
func readSSE(r io.Reader, line func(string), event func(name string, data []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var name string
	var data []string
	dispatch := func() {
		if name != "" || data != nil {
			if name == "" {
				name = "message"
			}
			event(name, []byte(strings.Join(data, "\n")))
		}
		name, data = "", nil
	}
	for sc.Scan() {
		l := sc.Text()
		line(l)
		field, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case l == "":
			dispatch()
		case field == "event":
			name = value
		case field == "data":
			data = append(data, value)
		}
	}
	dispatch()
	return sc.Err()
}
