package instr

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// want is a compact expectation: one "target|tool|params-json" per block.
func blocksOf(r Result) []string {
	out := []string{}
	for _, b := range r.Blocks {
		p, _ := json.Marshal(b.Params)
		out = append(out, b.Target+"|"+b.Tool+"|"+string(p))
	}
	return out
}

func dropsOf(r Result) []string {
	out := []string{}
	for _, d := range r.Dropped {
		out = append(out, d.Reason)
	}
	return out
}

func TestParseRules(t *testing.T) {
	f := "```"
	cases := []struct {
		name    string
		text    string
		blocks  []string
		dropped []string
		refused int
	}{
		{"rule1 bare", f + "instr\n@svc::status\n" + f, []string{`svc|status|{}`}, nil, 0},
		{"rule1 trailing blank lines", f + "instr\n@svc::status\n\n   \n" + f, []string{`svc|status|{}`}, nil, 0},
		{"rule2 json", f + "instr\n@svc::files/read::{\"path\":\"/etc/hostname\"}\n" + f, []string{`svc|files/read|{"path":"/etc/hostname"}`}, nil, 0},
		{"rule2 json numbers exact", f + "instr\n@svc::exec::{\"command\":\"true\",\"timeoutMs\":12345678901234}\n" + f, []string{`svc|exec|{"command":"true","timeoutMs":12345678901234}`}, nil, 0},
		{"rule2 bad json kept as text", f + "instr\n@svc::exec::{echo hi}\n" + f, []string{`svc|exec|{"command":"{echo hi}"}`}, nil, 0},
		{"rule2 json array is text", f + "instr\n@svc::exec::{\"a\":1} trailing\n" + f, []string{`svc|exec|{"command":"{\"a\":1} trailing"}`}, nil, 0},
		{"rule2 text", f + "instr\n@svc::exec::ls -la /tmp\n" + f, []string{`svc|exec|{"command":"ls -la /tmp"}`}, nil, 0},
		{"rule2 params with colons", f + "instr\n@svc::exec::echo a::b\n" + f, []string{`svc|exec|{"command":"echo a::b"}`}, nil, 0},
		{"rule2 empty params", f + "instr\n@svc::status::\n" + f, []string{`svc|status|{}`}, nil, 0},
		{"rule3 body", f + "instr\n@svc::exec\necho one\necho two\n" + f, []string{`svc|exec|{"command":"echo one\necho two"}`}, nil, 0},
		{"rule3 body keeps inner blank and trailing spaces", f + "instr\n@svc::exec\n\necho one  \n\necho two\n\n" + f, []string{`svc|exec|{"command":"echo one  \n\necho two"}`}, nil, 0},
		{"inline json plus body", f + "instr\n@svc::files/write::{\"path\":\"a.txt\"}\nhello\n" + f, []string{`svc|files/write|{"command":"hello","path":"a.txt"}`}, nil, 0},
		{"inline json with command plus body", f + "instr\n@svc::exec::{\"command\":\"x\"}\ny\n" + f, nil, []string{DropCommandTwice}, 0},
		{"inline text plus body", f + "instr\n@svc::exec::cat <<EOF\nline\nEOF\n" + f, []string{`svc|exec|{"command":"cat \u003c\u003cEOF\nline\nEOF"}`}, nil, 0},
		{"rule4 empty", f + "instr\n\n  \n" + f, nil, []string{DropEmpty}, 0},
		{"rule4 empty no lines", f + "instr\n" + f, nil, []string{DropEmpty}, 0},
		{"rule4 no at", f + "instr\nsvc::status\n" + f, nil, []string{DropBadHeader}, 0},
		{"rule4 single colon", f + "instr\n@svc:status\n" + f, nil, []string{DropBadHeader}, 0},
		{"rule4 empty target", f + "instr\n@::status\n" + f, nil, []string{DropBadHeader}, 0},
		{"rule4 empty tool", f + "instr\n@svc::\n" + f, nil, []string{DropBadHeader}, 0},
		{"rule4 space in tool", f + "instr\n@svc::exec ls\n" + f, nil, []string{DropBadHeader}, 0},
		{"rule4 colon in tool", f + "instr\n@svc::a:b\n" + f, nil, []string{DropBadHeader}, 0},
		{"text outside ignored", "Sure!\n@svc::exec::rm -rf /\nDone.", nil, nil, 0},
		{"other language ignored", f + "bash\n@svc::exec::ls\n" + f, nil, nil, 0},
		{"instr inside another fence is an example", "````markdown\n" + f + "instr\n@svc::status\n" + f + "\n````", nil, nil, 0},
		{"tag case-sensitive", f + "INSTR\n@svc::status\n" + f, nil, nil, 0},
		{"info string after tag", f + "instr title=x\n@svc::status\n" + f, []string{`svc|status|{}`}, nil, 0},
		{"tag prefix not enough", f + "instruction\n@svc::status\n" + f, nil, nil, 0},
		{"CRLF", f + "instr\r\n@svc::exec\r\necho a\r\necho b\r\n" + f + "\r\n", []string{`svc|exec|{"command":"echo a\necho b"}`}, nil, 0},
		{"lone CR", f + "instr\r@svc::status\r" + f, []string{`svc|status|{}`}, nil, 0},
		{"tilde fence", "~~~instr\n@svc::status\n~~~", []string{`svc|status|{}`}, nil, 0},
		{"tilde not closed by backticks", "~~~instr\n@svc::exec\n" + f + "\necho\n~~~", []string{`svc|exec|{"command":"` + f + `\necho"}`}, nil, 0},
		{"longer fence holds a fence", "````instr\n@svc::files/write::{\"path\":\"r.md\"}\n" + f + "go\nx\n" + f + "\n````", []string{`svc|files/write|{"command":"` + f + `go\nx\n` + f + `","path":"r.md"}`}, nil, 0},
		{"closing fence longer is fine", f + "instr\n@svc::status\n`````", []string{`svc|status|{}`}, nil, 0},
		{"closing fence with text is content", f + "instr\n@svc::exec\necho\n" + f + " not a close\n" + f, []string{`svc|exec|{"command":"echo\n` + f + ` not a close"}`}, nil, 0},
		{"two-backtick is not a fence", "``instr\n@svc::status\n``", nil, nil, 0},
		{"indented fence and body", "1. run this:\n   " + f + "instr\n   @svc::exec\n     echo a\n   " + f, []string{`svc|exec|{"command":"  echo a"}`}, nil, 0},
		{"trailing spaces on header and fence", f + "instr   \n@svc::status   \n" + f + "   ", []string{`svc|status|{}`}, nil, 0},
		{"leading blank before header", f + "instr\n\n\n@svc::status\n" + f, []string{`svc|status|{}`}, nil, 0},
		{"unicode", f + "instr\n@svc::exec::echo 你好 🌍\n" + f, []string{`svc|exec|{"command":"echo 你好 🌍"}`}, nil, 0},
		{"unicode ideographic space in tool", f + "instr\n@svc::st\u3000atus\n" + f, nil, []string{DropBadHeader}, 0},
		{"cut off at end", "text\n" + f + "instr\n@svc::exec\nrm -rf /tmp/x", nil, []string{DropUnterminated}, 0},
		{"several blocks", f + "instr\n@svc::status\n" + f + "\nand\n" + f + "instr\n@browser.platform_a::request::{\"path\":\"/x\"}\n" + f + "\n" + f + "instr\n@svc::status\n" + f,
			[]string{`svc|status|{}`, `browser.platform_a|request|{"path":"/x"}`, `svc|status|{}`}, nil, 0},
		{"superseded host shell", "::myhost::shell ls -la", nil, nil, 1},
		{"superseded host shell spaced", "  ::myhost shell uptime", nil, nil, 1},
		{"superseded slash-at", "@system::shell::{\"command\":\"ls\"} /@", nil, nil, 1},
		{"superseded slash-at open", "@system::shell::{\"command\":", nil, nil, 1},
		{"superseded inside a fence", f + "instr\n@system::shell::{\"command\":\"ls\"} /@\n" + f, nil, nil, 1},
		{"double colon prose is not superseded", ":: note :: nothing", nil, nil, 0},
		{"empty reply", "", nil, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Parse(c.text)
			if c.blocks == nil {
				c.blocks = []string{}
			}
			if c.dropped == nil {
				c.dropped = []string{}
			}
			if got := blocksOf(r); !reflect.DeepEqual(got, c.blocks) {
				t.Errorf("blocks\n got %q\nwant %q", got, c.blocks)
			}
			if got := dropsOf(r); !reflect.DeepEqual(got, c.dropped) {
				t.Errorf("dropped got %q want %q", got, c.dropped)
			}
			if len(r.Refused) != c.refused {
				t.Errorf("refused got %+v want %d", r.Refused, c.refused)
			}
			for _, rf := range r.Refused {
				if rf.Code != CodeSupersededFormat || !strings.Contains(rf.Message, "```instr") {
					t.Errorf("refusal does not teach the current format: %+v", rf)
				}
			}
		})
	}
}

func TestParseLabelsAndLines(t *testing.T) {
	r := Parse("hi\n```instr\n@svc::status\n```\n```instr\n@svc::status\n```\n```instr\n@svc::exec::ls\n```")
	var labels []string
	var lines []int
	for _, b := range r.Blocks {
		labels = append(labels, b.Label)
		lines = append(lines, b.Line)
	}
	if !reflect.DeepEqual(labels, []string{"@svc::status", "@svc::status #2", "@svc::exec"}) {
		t.Fatalf("labels %q", labels)
	}
	if !reflect.DeepEqual(lines, []int{2, 5, 8}) {
		t.Fatalf("lines %v", lines)
	}
	if r.Blocks[2].Index != 3 {
		t.Fatalf("index %d", r.Blocks[2].Index)
	}
}

// TestParseLinearWork counts the bytes the parser examines on adversarial
// inputs of growing size: the work per input byte must stay bounded.
func TestParseLinearWork(t *testing.T) {
	shapes := map[string]func(n int) string{
		"many unterminated openers": func(n int) string { return strings.Repeat("```instr\n", n) },
		"many blocks":               func(n int) string { return strings.Repeat("```instr\n@svc::status\n```\n", n) },
		"one long body":             func(n int) string { return "```instr\n@svc::exec\n" + strings.Repeat("echo ```\n", n) },
		"long header json":          func(n int) string { return "```instr\n@svc::exec::{" + strings.Repeat("\"a\":[", n) + "\n```" },
		"colons":                    func(n int) string { return "```instr\n@" + strings.Repeat(":", n) + "\n```" },
		"superseded lines":          func(n int) string { return strings.Repeat("@system::shell::{} /@\n", n) },
		"nested fences":             func(n int) string { return strings.Repeat("````\n```instr\n", n) },
	}
	for name, gen := range shapes {
		var ratios []float64
		for _, n := range []int{1_000, 10_000, 100_000} {
			in := gen(n)
			var p parser
			p.parse(in)
			ratios = append(ratios, float64(p.work)/float64(len(in)))
		}
		for _, r := range ratios {
			if r > 4 {
				t.Errorf("%s: work per byte %v across sizes; want bounded by 4", name, ratios)
			}
		}
		if ratios[2] > ratios[0]*1.5+0.1 {
			t.Errorf("%s: work per byte grows with size: %v", name, ratios)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	unit := "Here is the plan.\n\n```instr\n@svc::exec\necho hello\nls -la\n```\n\nand\n\n```instr\n@svc::files/read::{\"path\":\"/etc/hostname\"}\n```\n"
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		in := strings.Repeat(unit, size/len(unit)+1)
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for i := 0; i < b.N; i++ {
				Parse(in)
			}
		})
	}
}

// BenchmarkParseLongBodies: few blocks with long bodies, so the figure is
// the line scanner's own speed, not JSON decoding and result allocation.
func BenchmarkParseLongBodies(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		line := "echo the quick brown fox jumps over the lazy dog ``` ~~~\n"
		in := "```instr\n@svc::exec\n" + strings.Repeat(line, size/len(line)+1) + "```\n"
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				Parse(in)
			}
		})
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return itoa(n>>20) + "MiB"
	case n >= 1<<10:
		return itoa(n>>10) + "KiB"
	}
	return itoa(n) + "B"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
