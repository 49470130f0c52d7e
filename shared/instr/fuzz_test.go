package instr

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: Parse never panics, labels and params are always present, and
// every block's tool and target obey the name rule.
func FuzzParse(f *testing.F) {
	f.Add("```instr\n@svc::status\n```")
	f.Add("```instr\n@svc::exec::{\"command\":\"ls\"}\n```")
	f.Fuzz(func(t *testing.T, text string) {
		r := Parse(text)
		for _, b := range r.Blocks {
			if b.Params == nil || !name(b.Target) || !name(b.Tool) || !strings.HasPrefix(b.Label, "@") {
				t.Fatalf("bad block %+v", b)
			}
		}
		for _, rf := range r.Refused {
			if rf.Message == "" || (utf8.ValidString(text) && !utf8.ValidString(rf.Label)) {
				t.Fatalf("bad refusal %+v", rf)
			}
		}
		if len(r.Blocks)+len(r.Refused)+len(r.Dropped) > strings.Count(text, "\n")+1 {
			t.Fatalf("more results than lines")
		}
	})
}
