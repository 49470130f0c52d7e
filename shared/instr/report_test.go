package instr

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRenderFormat(t *testing.T) {
	got := Render([]Section{
		{Label: "@svc::status", OK: true, Output: "{\"ok\":true}\n"},
		{Label: "@svc::exec", OK: false, Output: "exit code 2: boom"},
		{Label: "@svc::system/pause", OK: true},
	}, ReportLimits{})
	want := ResultMarker + "\n-- @svc::status --\n成功\n{\"ok\":true}\n\n-- @svc::exec --\n失败\nexit code 2: boom\n\n-- @svc::system/pause --\n成功\n"
	if got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if !IsReport(got) || IsReport("```instr\n@svc::status\n```") {
		t.Fatal("IsReport")
	}
	if r := Parse(got); len(r.Blocks) != 0 {
		t.Fatal("a report parses as instructions")
	}
}

func TestRenderTruncates(t *testing.T) {
	long := strings.Repeat("你", 3000) // 9000 bytes
	got := Render([]Section{{Label: "@a::b", OK: true, Output: long}}, ReportLimits{SectionMaxBytes: 1000})
	if !strings.Contains(got, "[truncated: 8001 more bytes]") && !strings.Contains(got, "more bytes]") {
		t.Fatalf("no truncation note: %q", got[len(got)-80:])
	}
	if !utf8.ValidString(got) || len(got) > 1200 {
		t.Fatalf("bad cut: len %d valid %v", len(got), utf8.ValidString(got))
	}
	var many []Section
	for i := 0; i < 50; i++ {
		many = append(many, Section{Label: "@svc::status", OK: true, Output: strings.Repeat("x", 900)})
	}
	got = Render(many, ReportLimits{ReportMaxBytes: 5000})
	if len(got) > 5000 || !strings.Contains(got, "more sections]") {
		t.Fatalf("report cap: len %d", len(got))
	}
}
