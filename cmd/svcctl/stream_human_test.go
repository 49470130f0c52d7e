package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The event printer's exact lines: elapsed time, name, fields in order,
// identifiers only when they change, times relative, values quoted when
// they would not read as one word, non-JSON data as it came.
func TestEventPrinterLines(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	clock := t0
	var out bytes.Buffer
	p := newEventPrinter(&out, func() time.Time { return clock })
	events := []struct {
		after time.Duration
		name  string
		data  string
	}{
		{0, "stream_open", `{"requestId":"r1","platform":"platform_b","status":200}`},
		{1200 * time.Millisecond, "stream_event", `{"requestId":"r1","platform":"platform_b","seq":1,"data":"hello there"}`},
		{15 * time.Second, "stream_event", `{"requestId":"r1","platform":"platform_b","seq":2,"data":"","at":"2026-11-25T08:59:57Z","meta":{"a":[1,2]}}`},
		{200 * time.Second, "", `{"type":"turn_done","sessionId":"s1","ok":true}`},
		{0, "stream_error", `not json`},
	}
	for _, e := range events {
		clock = clock.Add(e.after)
		if err := p.Print(e.name, []byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Join([]string{
		"+0.0s   stream_open   requestId=r1 platform=platform_b status=200",
		"+1.2s   stream_event  seq=1 data=\"hello there\"",
		"+16s    stream_event  seq=2 data=\"\" at=\"19s ago\" meta={\"a\":[1,2]}",
		"+3m36s  turn_done     sessionId=s1 ok=true",
		"+3m36s  stream_error  not json",
	}, "\n") + "\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// readSSE dispatches events at blank lines, joins multi-line data, names
// an unnamed event "message", and hands every line on as it came.
func TestReadSSE(t *testing.T) {
	in := "event: stream_open\ndata: {\"a\":1}\n\n: comment\ndata: x\ndata: y\n\nevent: stream_end\ndata: {}\n"
	var lines []string
	var got []string
	if err := readSSE(strings.NewReader(in), func(l string) { lines = append(lines, l) }, func(n string, d []byte) { got = append(got, n+"|"+string(d)) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ";") != "stream_open|{\"a\":1};message|x\ny;stream_end|{}" || len(lines) != 9 {
		t.Fatalf("events %q, %d lines", got, len(lines))
	}
}
