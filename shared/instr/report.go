package instr

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ResultMarker is the first line of every report. A client loop never
// executes text that contains it, so the loop cannot run its own output.
const ResultMarker = "[instr-result] svcd instruction results"

// The words that open a section's body.
const (
	OK     = "成功"
	Failed = "失败"
)

// Default caps keep a report a size a chat input box accepts.
const (
	DefaultSectionMaxBytes = 4 << 10
	DefaultReportMaxBytes  = 16 << 10
)

// Section is one instruction's outcome.
type Section struct {
	Label  string
	OK     bool
	Output string // the output on success, the error message on failure
}

// ReportLimits bound the rendered report; zero means the default.
type ReportLimits struct {
	SectionMaxBytes int
	ReportMaxBytes  int
}

// Render writes the report:
//
//	[instr-result] svcd instruction results
//	-- @svc::status --
//	成功
//	<output>
//
//	-- @svc::exec --
//	失败
//	<error message>
//
// An output longer than the section cap is cut on a UTF-8 boundary and ends
// with a "[truncated: N more bytes]" line; sections that no longer fit the
// report cap are replaced by one "[truncated: N more sections]" line.
func Render(sections []Section, lim ReportLimits) string {
	if lim.SectionMaxBytes <= 0 {
		lim.SectionMaxBytes = DefaultSectionMaxBytes
	}
	if lim.ReportMaxBytes <= 0 {
		lim.ReportMaxBytes = DefaultReportMaxBytes
	}
	var b strings.Builder
	b.WriteString(ResultMarker)
	b.WriteString("\n")
	for i, s := range sections {
		var sec strings.Builder
		if i > 0 {
			sec.WriteString("\n")
		}
		fmt.Fprintf(&sec, "-- %s --\n", s.Label)
		if s.OK {
			sec.WriteString(OK)
		} else {
			sec.WriteString(Failed)
		}
		sec.WriteString("\n")
		out := strings.TrimRight(s.Output, "\n")
		if out != "" {
			sec.WriteString(Truncate(out, lim.SectionMaxBytes))
			sec.WriteString("\n")
		}
		// Keep room for the closing note.
		if b.Len()+sec.Len() > lim.ReportMaxBytes-64 && i > 0 {
			fmt.Fprintf(&b, "\n[truncated: %d more sections]\n", len(sections)-i)
			break
		}
		b.WriteString(sec.String())
	}
	return b.String()
}

// Truncate cuts s to at most max bytes (on a rune boundary) and appends a
// visible note saying how much was left out.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: %d more bytes]", len(s)-cut)
}

// IsReport says whether text carries the result marker (a report, possibly
// echoed back): such text is never executed.
func IsReport(text string) bool { return strings.Contains(text, ResultMarker) }
