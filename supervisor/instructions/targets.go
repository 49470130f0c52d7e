// Package instructions executes instruction blocks (shared/instr) against the
// daemon's own HTTP handler, renders the report, and runs live ingest: the
// path by which an AI reply drives the daemon. docs/instructions.md is its
// user-facing description.
package instructions

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// Call is one in-process HTTP call an instruction turns into.
type Call struct {
	Method string
	Path   string // with query, e.g. /v1/tasks?limit=5
	Body   map[string]any
}

// Control is an instruction the executor handles itself (conversation
// automation), not a route.
type Control struct {
	Op     string // pause, resume, mode
	Reason string
	Mode   string
}

// Resolved is what a target makes of one tool: a call or a control op.
type Resolved struct {
	Call    *Call
	Control *Control
}

// Target turns a tool and its params into a call. The registry is open: the
// supervisor may register more targets.
type Target func(tool string, params map[string]any) (Resolved, error)

// Registry maps target names (svc, system, agent, browser, …) to targets.
type Registry struct{ targets map[string]Target }

// NewRegistry holds SPEC.md's targets: svc and its alias system, agent,
// browser and browser.platform_a|b|c.
func NewRegistry() *Registry {
	r := &Registry{targets: map[string]Target{}}
	r.Register("svc", svcTarget)
	r.Register("system", svcTarget)
	r.Register("agent", agentTarget)
	r.Register("browser", browserTarget(""))
	for _, p := range []string{"platform_a", "platform_b", "platform_c"} {
		r.Register("browser."+p, browserTarget(p))
	}
	return r
}

// Register adds or replaces a target.
func (r *Registry) Register(name string, t Target) { r.targets[name] = t }

// Names lists the registered targets, sorted.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.targets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Resolve finds the target and lets it resolve the tool.
func (r *Registry) Resolve(target, tool string, params map[string]any) (Resolved, error) {
	t, ok := r.targets[target]
	if !ok {
		return Resolved{}, fmt.Errorf("unknown target %q; targets are %s", target, strings.Join(r.Names(), ", "))
	}
	return t(tool, params)
}

// ToolDoc is one row of the tool table (describe output and docs).
type ToolDoc struct {
	Tool   string `json:"tool"`
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Text   string `json:"text_field,omitempty"` // where a plain-text "command" goes
	Note   string `json:"note,omitempty"`
}

// svcTools is SPEC.md's tool table. text names the body field a plain-text
// parameter (the parser's "command") fills when the route has no command field.
var svcTools = []ToolDoc{
	{Tool: "exec", Method: "POST", Path: "/v1/exec", Text: "command"},
	{Tool: "files/read", Method: "POST", Path: "/v1/files/read", Text: "path"},
	{Tool: "files/write", Method: "POST", Path: "/v1/files/write", Text: "content"},
	{Tool: "describe", Method: "GET", Path: "/describe"},
	{Tool: "describe/business", Method: "GET", Path: "/describe/business"},
	{Tool: "describe/control", Method: "GET", Path: "/describe/control"},
	{Tool: "status", Method: "GET", Path: "/v1/status"},
	{Tool: "browser/status", Method: "GET", Path: "/v1/browser"},
	{Tool: "browser/request", Method: "POST", Path: "/v1/browser/request", Text: "prompt"},
	{Tool: "browser/actions", Method: "POST", Path: "/v1/browser/actions"},
	{Tool: "agent/sessions", Method: "POST", Path: "/v1/agent/sessions", Text: "purpose"},
	{Tool: "agent/turn", Method: "POST", Path: "/v1/agent/turn", Text: "input"},
	{Tool: "tasks", Method: "GET", Path: "/v1/tasks", Note: "params status and limit become the query"},
	{Tool: "system/pause", Method: "POST", Path: "/v1/system/pause", Text: "reason", Note: "runs even while the system is paused"},
	{Tool: "system/resume", Method: "POST", Path: "/v1/system/resume", Text: "reason", Note: "runs even while the system is paused"},
	{Tool: "conversation/pause", Note: "params scope (current), reason: pauses the message's conversation"},
	{Tool: "conversation/resume", Note: "param scope (current): resumes the message's conversation"},
	{Tool: "conversation/mode", Note: "params scope (current), mode (auto or manual)"},
}

// Tools is the tool table of the svc target (describe output).
func Tools() []ToolDoc { return append([]ToolDoc(nil), svcTools...) }

func toolDoc(tool string) (ToolDoc, bool) {
	for _, d := range svcTools {
		if d.Tool == tool {
			return d, true
		}
	}
	return ToolDoc{}, false
}

// IsSystemControl says whether tool still runs while the system is paused.
func IsSystemControl(tool string) bool { return tool == "system/pause" || tool == "system/resume" }

func svcTarget(tool string, params map[string]any) (Resolved, error) {
	d, ok := toolDoc(tool)
	if !ok {
		var names []string
		for _, t := range svcTools {
			names = append(names, t.Tool)
		}
		return Resolved{}, fmt.Errorf("unknown tool %q; tools are %s", tool, strings.Join(names, ", "))
	}
	if strings.HasPrefix(tool, "conversation/") {
		return conversationControl(strings.TrimPrefix(tool, "conversation/"), params)
	}
	body, err := textField(params, d.Text)
	if err != nil {
		return Resolved{}, err
	}
	if IsSystemControl(tool) {
		if _, ok := body["requested_by"]; !ok {
			body["requested_by"] = "instruction"
		}
	}
	if d.Method == "GET" {
		return getCall(d.Path, tool, body)
	}
	return Resolved{Call: &Call{Method: d.Method, Path: d.Path, Body: body}}, nil
}

// textField moves the parser's plain-text "command" into the field the route
// reads, when that field is not command and not already given.
func textField(params map[string]any, field string) (map[string]any, error) {
	body := make(map[string]any, len(params))
	for k, v := range params {
		body[k] = v
	}
	cmd, has := body["command"]
	if !has || field == "" || field == "command" {
		return body, nil
	}
	if _, taken := body[field]; taken {
		return nil, fmt.Errorf("both %q and plain text given; give the %s once", field, field)
	}
	delete(body, "command")
	body[field] = cmd
	return body, nil
}

// getCall builds a GET; only the tasks tool takes parameters (its query).
func getCall(path, tool string, params map[string]any) (Resolved, error) {
	if len(params) == 0 {
		return Resolved{Call: &Call{Method: "GET", Path: path}}, nil
	}
	if tool != "tasks" {
		return Resolved{}, fmt.Errorf("tool %q takes no parameters", tool)
	}
	q := url.Values{}
	for k, v := range params {
		if k != "status" && k != "limit" {
			return Resolved{}, fmt.Errorf("tool tasks takes status and limit, not %q", k)
		}
		q.Set(k, fmt.Sprint(v))
	}
	return Resolved{Call: &Call{Method: "GET", Path: path + "?" + q.Encode()}}, nil
}

// conversationControl validates conversation/pause|resume|mode. scope takes
// "current" (the default): the conversation the message came from.
func conversationControl(op string, params map[string]any) (Resolved, error) {
	allowed := map[string][]string{"pause": {"scope", "reason"}, "resume": {"scope"}, "mode": {"scope", "mode"}}[op]
	c := &Control{Op: op}
	for k, v := range params {
		s, isStr := v.(string)
		if !isStr {
			return Resolved{}, fmt.Errorf("conversation/%s: %q must be a string", op, k)
		}
		switch {
		case k == "scope":
			if s != "current" {
				return Resolved{}, fmt.Errorf("conversation/%s: scope %q is not supported; only \"current\" (the conversation this message came from)", op, s)
			}
		case k == "reason" && op == "pause":
			c.Reason = s
		case k == "command" && op == "pause":
			c.Reason = s
		case k == "mode" && op == "mode":
			c.Mode = s
		default:
			return Resolved{}, fmt.Errorf("conversation/%s takes %s, not %q", op, strings.Join(allowed, " and "), k)
		}
	}
	if op == "mode" && c.Mode != "auto" && c.Mode != "manual" {
		return Resolved{}, fmt.Errorf("conversation/mode: mode must be \"auto\" or \"manual\", got %q", c.Mode)
	}
	return Resolved{Control: c}, nil
}

var agentTools = map[string]Call{
	"status":   {Method: "GET", Path: "/v1/agent"},
	"sessions": {Method: "POST", Path: "/v1/agent/sessions"},
	"turn":     {Method: "POST", Path: "/v1/agent/turn"},
}

// agentTarget routes to /v1/agent/*: status, sessions, turn (also spelled
// agent/sessions, agent/turn as in the svc table).
func agentTarget(tool string, params map[string]any) (Resolved, error) {
	tool = strings.TrimPrefix(tool, "agent/")
	c, ok := agentTools[tool]
	if !ok {
		return Resolved{}, fmt.Errorf("unknown agent tool %q; agent tools are status, sessions, turn", tool)
	}
	text := map[string]string{"sessions": "purpose", "turn": "input"}[tool]
	body, err := textField(params, text)
	if err != nil {
		return Resolved{}, err
	}
	if c.Method == "GET" {
		return getCall(c.Path, tool, body)
	}
	c.Body = body
	return Resolved{Call: &c}, nil
}

// browserTarget routes to the browser routes; a platform target pins the
// request's platform.
func browserTarget(platform string) Target {
	return func(tool string, params map[string]any) (Resolved, error) {
		tool = strings.TrimPrefix(tool, "browser/")
		switch tool {
		case "request":
			body, err := textField(params, "prompt")
			if err != nil {
				return Resolved{}, err
			}
			if platform != "" {
				if p, has := body["platform"]; has && p != platform {
					return Resolved{}, fmt.Errorf("target browser.%s pins platform %s; the params ask for %v", platform, platform, p)
				}
				body["platform"] = platform
			}
			return Resolved{Call: &Call{Method: "POST", Path: "/v1/browser/request", Body: body}}, nil
		case "status":
			return getCall("/v1/browser", tool, params)
		case "actions":
			return Resolved{Call: &Call{Method: "POST", Path: "/v1/browser/actions", Body: params}}, nil
		}
		return Resolved{}, fmt.Errorf("unknown browser tool %q; browser tools are request, status, actions", tool)
	}
}
