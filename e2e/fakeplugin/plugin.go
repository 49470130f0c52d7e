// Package fakeplugin plays the browser plugin for tests and benchmarks: it
// pairs over a real WebSocket, and answers api_request by performing the
// HTTP request against a platform base URL the way a page would, buffered
// or streamed. It also answers management actions and records every
// message it receives.
package fakeplugin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// Options configure one fake plugin.
type Options struct {
	URL   string // ws://host:port/ws/browser
	Token string // pairing token sent in hello (browser_pairing = "token")
	// Code is a one-time pairing code; Credential the bridge credential a
	// code gave (HelloOK's credential). A hello carries exactly one of the
	// three (docs/bridge-protocol.md "Pairing").
	Code       string
	Credential string
	ClientID   string      // default "fake-1"
	Browser    string      // default "chrome"
	Header     http.Header // extra handshake headers (Origin, X-Forwarded-For …)
	// Platforms maps a platform to the base URL its "page" talks to.
	Platforms map[string]string
	// OnAction answers management actions; nil answers accepted+completed
	// with a small result; returning nil sends no answer at all.
	OnAction func(a bridgeproto.Action) *bridgeproto.ActionResult
	// OnInject answers conversation_inject; nil confirms delivery (level 1,
	// status 200); returning nil sends no answer.
	OnInject func(in bridgeproto.ConversationInject) *bridgeproto.InjectResult
	// Dedup, when set, makes a plugin that remembers delivery_keys: an
	// inject whose key it holds is answered ok+duplicate without OnInject
	// (nothing typed), and a confirmed delivery records its key. Nil is a
	// plugin that ignores the key (at-least-once across a daemon crash).
	Dedup *Delivered
	// Manual disables answering api_request (tests drive it themselves).
	Manual bool
	// SkipHello dials without pairing (tests of the pairing rules).
	SkipHello bool
}

// Msg is one received message: its type and raw JSON.
type Msg struct {
	Type string
	Raw  json.RawMessage
}

// Decode decodes the message into v.
func (m Msg) Decode(v any) error { return json.Unmarshal(m.Raw, v) }

// Plugin is a connected fake plugin.
type Plugin struct {
	helloOK bridgeproto.HelloOK
	opts    Options
	ws      *websocket.Conn
	http    *http.Client

	wmu sync.Mutex // gorilla allows one writer at a time

	mu       sync.Mutex
	cond     *sync.Cond
	msgs     []Msg
	closeErr error
	closed   bool
	inflight map[string]context.CancelFunc
	cancels  []string
}

// Dial connects and (unless SkipHello) pairs. The handshake response is
// returned for tests of refusals.
func Dial(ctx context.Context, o Options) (*Plugin, *http.Response, error) {
	if o.ClientID == "" {
		o.ClientID = "fake-1"
	}
	if o.Browser == "" {
		o.Browser = "chrome"
	}
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.DialContext(ctx, o.URL, o.Header)
	if err != nil {
		return nil, resp, err
	}
	p := &Plugin{opts: o, ws: ws, inflight: map[string]context.CancelFunc{},
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	p.cond = sync.NewCond(&p.mu)
	go p.readLoop()
	if !o.SkipHello {
		if err := p.Send(bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: o.Token, Code: o.Code, Credential: o.Credential, ClientID: o.ClientID, Browser: o.Browser, ExtensionVersion: "0.0.1-test",
			ShellRuntime: json.RawMessage(`{"tabs":1,"source":"fakeplugin"}`)}); err != nil {
			ws.Close()
			return nil, resp, err
		}
		ok, err := p.WaitFor(5*time.Second, bridgeproto.TypeHelloOK, nil)
		if err != nil {
			ws.Close()
			refused := ""
			if e, ok := p.lastOf(bridgeproto.TypeError); ok {
				refused = string(e.Raw)
			}
			return nil, resp, fmt.Errorf("no hello_ok: %w (close: %v; error frame: %s)", err, p.CloseErr(), refused)
		}
		_ = json.Unmarshal(ok.Raw, &p.helloOK)
	}
	return p, resp, nil
}

// HelloOK is the daemon's hello_ok (its credential when a code was sent).
func (p *Plugin) HelloOK() bridgeproto.HelloOK { return p.helloOK }

// lastOf is the newest received message of type typ.
func (p *Plugin) lastOf(typ string) (Msg, bool) {
	msgs := p.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == typ {
			return msgs[i], true
		}
	}
	return Msg{}, false
}

// ClientID is the plugin's clientId.
func (p *Plugin) ClientID() string { return p.opts.ClientID }

// Send writes one message as JSON. It encodes before taking the write
// lock, so concurrent answers only queue for the socket write itself.
func (p *Plugin) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return p.SendRaw(b)
}

// SendRaw writes one text frame as is.
func (p *Plugin) SendRaw(b []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_ = p.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return p.ws.WriteMessage(websocket.TextMessage, b)
}

// Close closes the connection.
func (p *Plugin) Close() error {
	p.wmu.Lock()
	_ = p.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second))
	p.wmu.Unlock()
	return p.ws.Close()
}

// CloseErr is the error that ended the read loop (a *websocket.CloseError
// when the daemon closed with a code), or nil while open.
func (p *Plugin) CloseErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closeErr
}

// WaitClosed waits until the daemon closed the connection and returns the
// close error.
func (p *Plugin) WaitClosed(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed {
		if time.Now().After(deadline) {
			return errors.New("still open")
		}
		p.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		p.mu.Lock()
	}
	return p.closeErr
}

// Messages is a copy of every message received so far.
func (p *Plugin) Messages() []Msg {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Msg(nil), p.msgs...)
}

// Count is how many messages of typ arrived.
func (p *Plugin) Count(typ string) int {
	n := 0
	for _, m := range p.Messages() {
		if m.Type == typ {
			n++
		}
	}
	return n
}

// Cancels is the requestIds of every request_cancel received.
func (p *Plugin) Cancels() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.cancels...)
}

// WaitFor waits for a message of typ matching match (nil: any), searching
// everything received so far, and returns the latest match.
func (p *Plugin) WaitFor(timeout time.Duration, typ string, match func(Msg) bool) (Msg, error) {
	deadline := time.Now().Add(timeout)
	for {
		msgs := p.Messages()
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Type == typ && (match == nil || match(msgs[i])) {
				return msgs[i], nil
			}
		}
		if time.Now().After(deadline) {
			return Msg{}, fmt.Errorf("no %s message within %s", typ, timeout)
		}
		if p.CloseErr() != nil {
			return Msg{}, fmt.Errorf("connection closed waiting for %s: %w", typ, p.CloseErr())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitCount waits until at least n messages of typ arrived.
func (p *Plugin) WaitCount(timeout time.Duration, typ string, n int) error {
	deadline := time.Now().Add(timeout)
	for p.Count(typ) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d %s messages within %s, want %d", p.Count(typ), typ, timeout, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

func (p *Plugin) readLoop() {
	for {
		_, data, err := p.ws.ReadMessage()
		if err != nil {
			p.mu.Lock()
			p.closed, p.closeErr = true, err
			for _, c := range p.inflight {
				c()
			}
			p.mu.Unlock()
			return
		}
		// The daemon writes "type" first; the full decode below is the only
		// one (a page's JSON.parse), and ReadMessage's buffer is this
		// message's own, so it is kept without a copy.
		typ := bridgeproto.PeekType(data)
		if typ == "" {
			var head struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(data, &head)
			typ = head.Type
		}
		p.mu.Lock()
		p.msgs = append(p.msgs, Msg{Type: typ, Raw: data})
		p.mu.Unlock()
		switch typ {
		case bridgeproto.TypeAPIRequest:
			var req bridgeproto.APIRequest
			if json.Unmarshal(data, &req) == nil && !p.opts.Manual {
				ctx, cancel := context.WithCancel(context.Background())
				p.mu.Lock()
				p.inflight[req.RequestID] = cancel
				p.mu.Unlock()
				go p.serve(ctx, req)
			}
		case bridgeproto.TypeRequestCancel:
			var rc bridgeproto.RequestCancel
			_ = json.Unmarshal(data, &rc)
			p.mu.Lock()
			p.cancels = append(p.cancels, rc.RequestID)
			if c := p.inflight[rc.RequestID]; c != nil {
				c()
			}
			p.mu.Unlock()
		case bridgeproto.TypeAction:
			var a bridgeproto.Action
			if json.Unmarshal(data, &a) == nil {
				go p.answerAction(a)
			}
		case bridgeproto.TypeConversationInject:
			var in bridgeproto.ConversationInject
			if json.Unmarshal(data, &in) == nil {
				go p.answerInject(in)
			}
		}
	}
}

// answerInject confirms an injection as a page would after its send request
// answered 200 (OnInject overrides; returning nil sends no answer).
func (p *Plugin) answerInject(in bridgeproto.ConversationInject) {
	if d := p.opts.Dedup; d != nil && d.Has(in.DeliveryKey) {
		_ = p.Send(&bridgeproto.InjectResult{Type: bridgeproto.TypeInjectResult, InjectID: in.InjectID, OK: true, Duplicate: true, DeliveryKey: in.DeliveryKey})
		return
	}
	res := &bridgeproto.InjectResult{OK: true, DeliveryAck: &bridgeproto.DeliveryAck{Level: 1, StatusCode: 200}}
	if p.opts.OnInject != nil {
		res = p.opts.OnInject(in)
	}
	if res == nil {
		return
	}
	if p.opts.Dedup != nil && res.OK {
		p.opts.Dedup.Mark(in.DeliveryKey)
	}
	res.Type, res.InjectID = bridgeproto.TypeInjectResult, in.InjectID
	_ = p.Send(res)
}

func (p *Plugin) answerAction(a bridgeproto.Action) {
	var res *bridgeproto.ActionResult
	if p.opts.OnAction != nil {
		res = p.opts.OnAction(a)
	} else {
		opts, _ := json.Marshal(a.Options)
		res = &bridgeproto.ActionResult{Accepted: true, Completed: true,
			Target:       json.RawMessage(fmt.Sprintf(`{"platform":%q,"tabId":7}`, a.Platform)),
			Result:       json.RawMessage(fmt.Sprintf(`{"action":%q,"options":%s,"results":[{"delivery_ack":{"level":1,"status_code":200}}]}`, a.Action, opts)),
			ShellRuntime: json.RawMessage(`{"tabs":1,"source":"fakeplugin","after":"action"}`)}
	}
	if res == nil {
		return
	}
	res.Type, res.ActionID = bridgeproto.TypeActionResult, a.ActionID
	_ = p.Send(res)
}

// serve performs one relayed request against the platform's base URL.
func (p *Plugin) serve(ctx context.Context, req bridgeproto.APIRequest) {
	defer func() {
		p.mu.Lock()
		delete(p.inflight, req.RequestID)
		p.mu.Unlock()
	}()
	fail := func(err error) {
		if req.ResponseMode == bridgeproto.ModeSSE {
			_ = p.Send(bridgeproto.StreamError{Type: bridgeproto.TypeStreamError, RequestID: req.RequestID, Code: "page_error", Message: err.Error()})
			return
		}
		_ = p.Send(bridgeproto.APIResponse{Type: bridgeproto.TypeAPIResponse, RequestID: req.RequestID, Error: err.Error()})
	}
	base, ok := p.opts.Platforms[req.Platform]
	if !ok {
		fail(fmt.Errorf("no page for %s", req.Platform))
		return
	}
	path := req.Path
	var body io.Reader
	if len(req.Body) > 0 {
		body = bytes.NewReader(req.Body)
	}
	if path == "" { // platform_a completion compatibility mode
		path = "/api/complete"
		b, _ := json.Marshal(map[string]string{"prompt": req.Prompt})
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, base+path, body)
	if err != nil {
		fail(err)
		return
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	resp, err := p.http.Do(hr)
	if err != nil {
		if ctx.Err() == nil {
			fail(err)
		}
		return
	}
	defer resp.Body.Close()
	headers := map[string]string{}
	for k := range resp.Header {
		headers[k] = resp.Header.Get(k)
	}
	if req.ResponseMode != bridgeproto.ModeSSE {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			if ctx.Err() == nil {
				fail(err)
			}
			return
		}
		_ = p.Send(bridgeproto.APIResponse{Type: bridgeproto.TypeAPIResponse, RequestID: req.RequestID, Status: resp.StatusCode, Headers: headers, Body: string(b)})
		return
	}
	_ = p.Send(bridgeproto.StreamOpen{Type: bridgeproto.TypeStreamOpen, RequestID: req.RequestID, Status: resp.StatusCode, Headers: headers})
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var seq int64
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		seq++
		if err := p.Send(bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: req.RequestID, Seq: seq, Data: data}); err != nil {
			return
		}
	}
	if ctx.Err() != nil {
		return // cancelled: the daemon already knows
	}
	if err := sc.Err(); err != nil {
		_ = p.Send(bridgeproto.StreamError{Type: bridgeproto.TypeStreamError, RequestID: req.RequestID, Code: "read_failed", Message: err.Error()})
		return
	}
	_ = p.Send(bridgeproto.StreamEnd{Type: bridgeproto.TypeStreamEnd, RequestID: req.RequestID})
}
