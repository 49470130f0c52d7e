package bridge

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A flood of refusals from many sources writes at most one line per source
// as it starts and one summary line per source per interval (the sources
// past maxLoggedSources share one), with the counts adding up.
func TestRefusalLogSummarisesAFlood(t *testing.T) {
	var buf bytes.Buffer
	r := newRefusalLog(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Warn}))
	const sources, each = 100, 50
	for i := 0; i < each; i++ {
		for s := 0; s < sources; s++ {
			r.note(fmt.Sprintf("127.0.%d.1", s), "pairing_code_invalid")
		}
	}
	r.flush()
	lines := strings.Count(buf.String(), "\n")
	if lines > 2*maxLoggedSources+1 {
		t.Fatalf("%d lines for %d refusals:\n%s", lines, sources*each, buf.String())
	}
	total := 0
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var n int
		if i := strings.Index(l, "more="); i >= 0 {
			fmt.Sscanf(l[i:], "more=%d", &n)
			total += n
		} else {
			total++
		}
	}
	if total != sources*each {
		t.Fatalf("the lines count %d refusals, want %d:\n%s", total, sources*each, buf.String())
	}
	buf.Reset()
	r.flush()
	if buf.Len() != 0 {
		t.Fatalf("an idle interval logged: %s", buf.String())
	}
}
