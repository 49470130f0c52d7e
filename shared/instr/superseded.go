package instr

import "strings"

// The two instruction formats the fenced block replaced (SPEC.md
// "Versioning" 4). They are recognised so an AI still using them learns the
// current format, and never executed.
const (
	// FormatHostShell: a line "::<host>::shell <command>" (or "::<host> shell …").
	FormatHostShell = "double-colon host/shell format"
	// FormatSlashAt: "@system::shell::<json> /@".
	FormatSlashAt = "@…::shell::<json> /@ format"
)

// superseded names the superseded format line is written in, or "".
func superseded(line string) string {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "::") {
		rest := t[2:]
		host := rest
		if i := strings.IndexAny(rest, ": \t"); i >= 0 {
			host = rest[:i]
		}
		after := strings.TrimLeft(rest[len(host):], ": \t")
		if host != "" && strings.HasPrefix(after, "shell") {
			return FormatHostShell
		}
		return ""
	}
	if strings.HasPrefix(t, "@") && strings.Contains(t, "::") {
		if strings.HasSuffix(t, "/@") {
			return FormatSlashAt
		}
		if i := strings.Index(t, "::shell::"); i > 1 && !strings.ContainsAny(t[1:i], ": \t") {
			return FormatSlashAt
		}
	}
	return ""
}

// refuse records a superseded-format instruction with a message that shows
// the current format.
func (p *parser) refuse(line int, text, kind string) {
	label := strings.TrimSpace(text)
	if r := []rune(label); len(r) > 60 {
		label = string(r[:60]) + "…"
	}
	p.res.Refused = append(p.res.Refused, Refused{
		Line: line, Label: label, Code: CodeSupersededFormat,
		Message: "the " + kind + " is superseded and is not executed; write one fenced block per instruction: ```" + Tag + " then @svc::exec::<command> then ```",
	})
}
