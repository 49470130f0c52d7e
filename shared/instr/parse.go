package instr

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Tag is the fence language tag of an instruction block.
const Tag = "instr"

// Parse finds the instruction blocks of one AI reply. It never fails: what
// is not an instruction is ignored, dropped or refused, as docs/instructions.md
// describes.
func Parse(text string) Result {
	var p parser
	return p.parse(text)
}

// parser walks the reply once, line by line. work counts the bytes each step
// examines so a test can check the total stays proportional to the input.
type parser struct {
	res    Result
	labels map[string]int
	work   int
}

// fence is an open fenced block.
type fence struct {
	char   byte // '`' or '~'
	n      int  // fence length; the closing fence needs at least as many
	indent int  // leading whitespace of the opening fence, removed from body lines
	instr  bool // tagged instr (otherwise skipped: an example, not an instruction)
	line   int
	body   []string
}

func (p *parser) parse(text string) Result {
	p.res = Result{Blocks: []Block{}, Refused: []Refused{}, Dropped: []Dropped{}}
	p.labels = map[string]int{}
	text = normalizeNewlines(text)
	p.work += len(text)
	var open *fence
	lineNo := 0
	for lineNo == 0 || len(text) > 0 {
		var line string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, ""
		}
		lineNo++
		p.work += len(line) + 1
		if open != nil {
			if closes(line, open) {
				if open.instr {
					p.block(open)
				}
				open = nil
				continue
			}
			if open.instr {
				open.body = append(open.body, dedent(line, open.indent))
			}
			continue
		}
		if f, ok := opens(line); ok {
			f.line = lineNo
			open = &f
			continue
		}
		if kind := superseded(line); kind != "" {
			p.refuse(lineNo, line, kind)
		}
	}
	if open != nil && open.instr {
		p.res.Dropped = append(p.res.Dropped, Dropped{Line: open.line, Reason: DropUnterminated})
	}
	return p.res
}

// normalizeNewlines turns CRLF and lone CR into LF.
func normalizeNewlines(s string) string {
	if !strings.ContainsRune(s, '\r') {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// leading counts the spaces and tabs a line starts with.
func leading(line string) int {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return i
}

// opens reports whether line opens a fenced block: any indentation, then at
// least three backticks or tildes, then the info string (whose first word is
// the language tag). A backtick fence's info string holds no backtick.
func opens(line string) (fence, bool) {
	ind := leading(line)
	rest := line[ind:]
	if len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return fence{}, false
	}
	c := rest[0]
	n := 0
	for n < len(rest) && rest[n] == c {
		n++
	}
	if n < 3 {
		return fence{}, false
	}
	info := strings.TrimSpace(rest[n:])
	if c == '`' && strings.IndexByte(info, '`') >= 0 {
		return fence{}, false
	}
	tag := info
	if i := strings.IndexAny(tag, " \t"); i >= 0 {
		tag = tag[:i]
	}
	return fence{char: c, n: n, indent: ind, instr: tag == Tag}, true
}

// closes reports whether line closes f: any indentation, at least f.n of the
// same fence character, nothing but whitespace after.
func closes(line string, f *fence) bool {
	rest := line[leading(line):]
	n := 0
	for n < len(rest) && rest[n] == f.char {
		n++
	}
	return n >= f.n && strings.TrimSpace(rest[n:]) == ""
}

// dedent removes up to n leading spaces or tabs (the fence's own indentation).
func dedent(line string, n int) string {
	i := 0
	for i < n && i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return line[i:]
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// block turns a closed instr fence into a Block, a Refused or a Dropped.
func (p *parser) block(f *fence) {
	lines := trimBlankLines(f.body)
	if len(lines) == 0 {
		p.res.Dropped = append(p.res.Dropped, Dropped{Line: f.line, Reason: DropEmpty})
		return
	}
	header := strings.TrimSpace(lines[0])
	if kind := superseded(header); kind != "" {
		p.refuse(f.line, header, kind)
		return
	}
	target, tool, inline, ok := splitHeader(header)
	if !ok {
		p.res.Dropped = append(p.res.Dropped, Dropped{Line: f.line, Reason: DropBadHeader})
		return
	}
	rest := lines[1:]
	for len(rest) > 0 && blank(rest[0]) {
		rest = rest[1:]
	}
	body := strings.Join(rest, "\n")
	p.work += len(body)
	params, reason := buildParams(inline, body)
	if reason != "" {
		p.res.Dropped = append(p.res.Dropped, Dropped{Line: f.line, Reason: reason})
		return
	}
	label := "@" + target + "::" + tool
	p.labels[label]++
	if n := p.labels[label]; n > 1 {
		label = fmt.Sprintf("%s #%d", label, n)
	}
	p.res.Blocks = append(p.res.Blocks, Block{
		Index: len(p.res.Blocks) + 1, Line: f.line, Target: target, Tool: tool, Params: params, Label: label,
	})
}

// splitHeader splits "@target::tool[::params]". Target and tool are non-empty
// and hold no colon and no whitespace; params is the trimmed rest (may be "").
func splitHeader(h string) (target, tool, params string, ok bool) {
	if !strings.HasPrefix(h, "@") {
		return "", "", "", false
	}
	rest := h[1:]
	i := strings.Index(rest, "::")
	if i < 0 {
		return "", "", "", false
	}
	target, rest = rest[:i], rest[i+2:]
	if j := strings.Index(rest, "::"); j >= 0 {
		tool, params = rest[:j], strings.TrimSpace(rest[j+2:])
	} else {
		tool = rest
	}
	if !name(target) || !name(tool) {
		return "", "", "", false
	}
	return target, tool, params, true
}

// name: non-empty, no colon, no whitespace.
func name(s string) bool {
	return s != "" && !strings.ContainsAny(s, ": \t\n\v\f\r\u00a0\u3000")
}

// Reasons buildParams drops a block for.
const DropCommandTwice = "command_given_twice"

// buildParams applies SPEC.md's parameter rules 1–3 and the combination
// docs/instructions.md decides: inline JSON plus body lines sets command from
// the body (unless the JSON already has one); inline text plus body lines is
// one command, inline text first.
func buildParams(inline, body string) (map[string]any, string) {
	if inline != "" && inline[0] == '{' {
		if obj, ok := jsonObject(inline); ok {
			if body != "" {
				if _, has := obj["command"]; has {
					return nil, DropCommandTwice
				}
				obj["command"] = body
			}
			return obj, ""
		}
	}
	switch {
	case inline == "" && body == "":
		return map[string]any{}, ""
	case inline == "":
		return map[string]any{"command": body}, ""
	case body == "":
		return map[string]any{"command": inline}, ""
	default:
		return map[string]any{"command": inline + "\n" + body}, ""
	}
}

// jsonObject decodes s as exactly one JSON object (numbers kept exact).
func jsonObject(s string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, false
	}
	return obj, strings.TrimSpace(s[dec.InputOffset():]) == ""
}

// trimBlankLines drops whitespace-only lines at both ends.
func trimBlankLines(lines []string) []string {
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return lines
}
