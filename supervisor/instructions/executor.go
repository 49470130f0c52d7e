package instructions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/svcd/svcd/shared/instr"
)

// Outcome statuses of one instruction.
const (
	StatusSucceeded    = "succeeded"
	StatusFailed       = "failed"
	StatusSystemPaused = "system_paused"
	StatusRefused      = "refused" // superseded format: never executed
)

// Caller is the authority and origin an instruction batch runs with. The
// executor copies these onto every in-process request, so an instruction
// never has more authority than whoever sent it.
type Caller struct {
	Authorization string // the caller's own Authorization header, or ""
	Host          string // a Host the guard accepts (the caller's own)
	RemoteAddr    string
	RequestID     string // the caller's request id; each call gets "<id>.<index>" so logs correlate
	// MayInject lets ingest type the report into the conversation: the
	// batch came from the conversation's own plugin over the bridge, or from
	// an HTTP caller with the shared token. Any other local process could
	// otherwise put words of its choosing into a user's chat.
	MayInject bool
	// ClientID is the bridge client whose conversation sent the batch
	// ("" for HTTP); with Ingest's conversation and message id it is
	// recorded on every host operation the batch runs or is refused.
	ClientID            string
	LocalConversationID string
	MessageID           string
	// HostOpsDenied, when set, fails every host operation with code
	// "scope" and this message instead of running it (a code-paired client
	// without the host-ops scope, issue 25).
	HostOpsDenied string
}

// Origin says where a host operation came from (task log, results).
type Origin struct {
	ClientID            string `json:"client_id,omitempty"`
	LocalConversationID string `json:"local_conversation_id,omitempty"`
	MessageID           string `json:"message_id,omitempty"`
}

// String is the task log's form of o.
func (o *Origin) String() string {
	return fmt.Sprintf("client=%s conversation=%s message=%s", firstNonEmpty(o.ClientID, "-"), firstNonEmpty(o.LocalConversationID, "-"), firstNonEmpty(o.MessageID, "-"))
}

// IsHostOp reports whether path is a host operation (exec, file read/write).
func IsHostOp(path string) bool {
	switch path {
	case "/v1/exec", "/v1/files/read", "/v1/files/write":
		return true
	}
	return false
}

// Options tune the executor; zero values mean the defaults.
type Options struct {
	BlockTimeout time.Duration // per instruction (default 60 s)
	MaxBlocks    int           // per reply (default 32); more are failed unrun
	Limits       instr.ReportLimits
}

// Executor runs instruction blocks through the daemon's own guarded handler.
type Executor struct {
	handler  func() http.Handler
	registry *Registry
	opts     Options
	m        *execMetrics // metrics.go
}

// NewExecutor builds an executor over handler (called per batch, since the
// supervisor builds its handler after its routes).
func NewExecutor(handler func() http.Handler, reg *Registry, opts Options) *Executor {
	if opts.BlockTimeout <= 0 {
		opts.BlockTimeout = 60 * time.Second
	}
	if opts.MaxBlocks <= 0 {
		opts.MaxBlocks = 32
	}
	return &Executor{handler: handler, registry: reg, opts: opts, m: newExecMetrics()}
}

// Outcome is the structured result of one instruction.
type Outcome struct {
	Index      int             `json:"index"`
	Label      string          `json:"label"`
	Target     string          `json:"target,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Status     string          `json:"status"`
	OK         bool            `json:"ok"`
	HTTPStatus int             `json:"http_status,omitempty"`
	Output     string          `json:"output,omitempty"`
	Error      *ErrorInfo      `json:"error,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	DurationMs int64           `json:"duration_ms"`
	Origin     *Origin         `json:"origin,omitempty"` // host operations only
}

// ErrorInfo says why an instruction failed.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Batch is one reply's execution: the report and the per-instruction results.
type Batch struct {
	Report  string          `json:"report"`
	Results []Outcome       `json:"results"`
	Dropped []instr.Dropped `json:"dropped"`
}

// Plan says, per block, how a batch runs: Skip marks blocks recorded as
// system_paused instead of run; Control handles conversation instructions.
type Plan struct {
	Paused  bool
	Control func(ctx context.Context, c Control) (string, error) // nil: no current conversation
}

// Run executes parsed blocks in parallel, each under its own timeout, and
// collects the results after all finish. Refused (superseded) instructions
// become failed sections; dropped blocks appear only in the structured result.
func (e *Executor) Run(ctx context.Context, parsed instr.Result, caller Caller, plan Plan) Batch {
	blocks := parsed.Blocks
	results := make([]Outcome, 0, len(blocks)+len(parsed.Refused))
	for _, rf := range parsed.Refused {
		results = append(results, Outcome{Label: rf.Label, Status: StatusRefused, Error: &ErrorInfo{Code: rf.Code, Message: rf.Message}, Output: rf.Message})
	}
	run := make([]Outcome, len(blocks))
	var wg sync.WaitGroup
	for i, b := range blocks {
		run[i] = Outcome{Index: b.Index, Label: b.Label, Target: b.Target, Tool: b.Tool}
		if i >= e.opts.MaxBlocks {
			run[i].fail(StatusFailed, "too_many_instructions", fmt.Sprintf("a reply may hold at most %d instructions; this one was not run", e.opts.MaxBlocks))
			continue
		}
		if plan.Paused && !IsSystemControl(b.Tool) {
			run[i].fail(StatusSystemPaused, "system_paused", "the system is paused; recorded as system_paused and not executed (system/resume runs even while paused)")
			continue
		}
		wg.Add(1)
		go func(o *Outcome, b instr.Block) {
			defer wg.Done()
			start := time.Now()
			e.runOne(ctx, o, b, caller, plan)
			o.DurationMs = time.Since(start).Milliseconds()
		}(&run[i], b)
	}
	wg.Wait()
	results = append(results, run...)
	e.m.batch(results)
	sections := make([]instr.Section, len(results))
	for i, o := range results {
		sections[i] = instr.Section{Label: o.Label, OK: o.OK, Output: o.Output}
	}
	dropped := parsed.Dropped
	if dropped == nil {
		dropped = []instr.Dropped{}
	}
	return Batch{Report: instr.Render(sections, e.opts.Limits), Results: results, Dropped: dropped}
}

func (o *Outcome) fail(status, code, msg string) {
	o.Status, o.OK = status, false
	o.Error = &ErrorInfo{Code: code, Message: msg}
	o.Output = msg
}

// runOne resolves and performs one block under the per-block timeout.
func (e *Executor) runOne(ctx context.Context, o *Outcome, b instr.Block, caller Caller, plan Plan) {
	res, err := e.registry.Resolve(b.Target, b.Tool, b.Params)
	if err != nil {
		o.fail(StatusFailed, "invalid_instruction", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.BlockTimeout)
	defer cancel()
	if res.Control != nil {
		if plan.Control == nil {
			o.fail(StatusFailed, "no_current_conversation", "conversation instructions act on the conversation a message came from; they work through ingest, not /v1/instructions/run")
			return
		}
		msg, err := plan.Control(ctx, *res.Control)
		if err != nil {
			o.fail(StatusFailed, "conversation_control_failed", err.Error())
			return
		}
		o.Status, o.OK, o.Output = StatusSucceeded, true, msg
		return
	}
	if IsHostOp(res.Call.Path) {
		o.Origin = &Origin{ClientID: caller.ClientID, LocalConversationID: caller.LocalConversationID, MessageID: caller.MessageID}
		if caller.HostOpsDenied != "" {
			o.fail(StatusFailed, "scope", caller.HostOpsDenied)
			return
		}
	}
	e.call(ctx, o, *res.Call, caller)
}

// call sends c through the full guarded handler in-process and reads the
// answer. The handler runs in its own goroutine so the block timeout holds
// even for a handler that ignores its context.
func (e *Executor) call(ctx context.Context, o *Outcome, c Call, caller Caller) {
	var body []byte
	if c.Method != http.MethodGet {
		var err error
		if body, err = json.Marshal(c.Body); err != nil {
			o.fail(StatusFailed, "invalid_instruction", err.Error())
			return
		}
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, c.Path, bytes.NewReader(body))
	if err != nil {
		o.fail(StatusFailed, "invalid_instruction", err.Error())
		return
	}
	if c.Method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	if caller.Authorization != "" {
		req.Header.Set("Authorization", caller.Authorization)
	}
	if caller.RequestID != "" {
		req.Header.Set("X-Request-Id", fmt.Sprintf("%.100s.%d", caller.RequestID, o.Index))
	}
	req.Host = caller.Host
	req.RemoteAddr = caller.RemoteAddr
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.handler().ServeHTTP(rec, req)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		o.fail(StatusFailed, "timeout", fmt.Sprintf("%s %s did not finish within %d ms", c.Method, c.Path, e.opts.BlockTimeout.Milliseconds()))
		return
	}
	o.HTTPStatus = rec.Code
	interpret(o, c, rec.Code, rec.Body.Bytes())
}

// interpret turns an HTTP answer into an outcome: the envelope's ok and, for
// host operations, data.ok decide; the output is what a reader needs.
func interpret(o *Outcome, c Call, status int, raw []byte) {
	var env struct {
		OK    bool            `json:"ok"`
		Data  json.RawMessage `json:"data"`
		Error *ErrorInfo      `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		if status >= 200 && status < 300 {
			o.Status, o.OK, o.Output = StatusSucceeded, true, string(raw)
		} else {
			o.fail(StatusFailed, "http_error", fmt.Sprintf("HTTP %d: %s", status, strings.TrimSpace(string(raw))))
		}
		return
	}
	if !env.OK || status >= 300 {
		e := env.Error
		if e == nil {
			e = &ErrorInfo{Code: "http_error", Message: strings.TrimSpace(string(raw))}
		}
		o.fail(StatusFailed, e.Code, fmt.Sprintf("HTTP %d %s: %s", status, e.Code, e.Message))
		return
	}
	o.Data = env.Data
	switch c.Path {
	case "/v1/exec", "/v1/files/read", "/v1/files/write":
		hostopsOutput(o, c.Path, env.Data)
	default:
		o.Status, o.OK, o.Output = StatusSucceeded, true, indent(env.Data)
	}
}

// hostopsOutput reads data.ok and data.result of the host-operation routes.
func hostopsOutput(o *Outcome, path string, data json.RawMessage) {
	var d struct {
		OK     bool   `json:"ok"`
		Error  string `json:"error"`
		Code   string `json:"code"`
		Result struct {
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			ExitCode int    `json:"exitCode"`
			TimedOut bool   `json:"timedOut"`
			Path     string `json:"path"`
			Content  string `json:"content"`
			Size     int64  `json:"size"`
		} `json:"result"`
	}
	_ = json.Unmarshal(data, &d)
	r := d.Result
	var out strings.Builder
	switch path {
	case "/v1/exec":
		out.WriteString(r.Stdout)
		if r.Stderr != "" {
			if out.Len() > 0 && !strings.HasSuffix(r.Stdout, "\n") {
				out.WriteString("\n")
			}
			out.WriteString("[stderr]\n" + r.Stderr)
		}
		if !d.OK {
			msg := fmt.Sprintf("exit code %d", r.ExitCode)
			if r.TimedOut {
				msg += " (timed out)"
			}
			if d.Error != "" {
				msg += ": " + d.Error
			}
			if out.Len() > 0 {
				msg += "\n" + out.String()
			}
			o.fail(StatusFailed, firstNonEmpty(d.Code, "exec_failed"), msg)
			return
		}
	case "/v1/files/read":
		out.WriteString(r.Content)
	case "/v1/files/write":
		fmt.Fprintf(&out, "wrote %d bytes to %s", r.Size, r.Path)
	}
	if !d.OK {
		o.fail(StatusFailed, firstNonEmpty(d.Code, "operation_failed"), firstNonEmpty(d.Error, "the operation failed"))
		return
	}
	o.Status, o.OK, o.Output = StatusSucceeded, true, out.String()
}

func indent(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
