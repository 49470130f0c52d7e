package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// eventPrinter writes a stream of events (SSE, a WebSocket of JSON
// messages) for people: one line per event,
//
//	+1.2s  stream_event  seq=3 event=message data="hello there"
//
// the time since the stream began first (relative, like svcctl's other
// times), then the event's name, then its JSON object's fields as
// key=value in the daemon's order. A field whose value is the same as in
// the previous event (requestId, platform, clientId…) is left out after
// its first showing, so the lines carry what changes. Times inside the
// event read "3s ago", nested values as compact JSON, long values are cut.
// Data that is not a JSON object is printed as it came. -format=json does
// not use it: streams are then copied raw.
type eventPrinter struct {
	w     io.Writer
	now   func() time.Time
	start time.Time
	last  map[string]string
}

// newEventPrinter starts a stream's clock at now().
func newEventPrinter(w io.Writer, now func() time.Time) *eventPrinter {
	return &eventPrinter{w: w, now: now, start: now(), last: map[string]string{}}
}

// maxEventValue is where a value is cut on an event line.
const maxEventValue = 200

// Print writes one event. name may be "" (a message without a type: the
// object's "type" field names it when there is one).
func (p *eventPrinter) Print(name string, data []byte) error {
	now := p.now()
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s", "+"+elapsed(now.Sub(p.start)))
	fields := p.fields(data, now, &name)
	if name != "" {
		fmt.Fprintf(&b, " %-13s", quoteIfNeeded(name))
	}
	if fields != "" {
		b.WriteString(" " + fields)
	}
	_, err := io.WriteString(p.w, strings.TrimRight(b.String(), " ")+"\n")
	return err
}

// fields renders data's fields, or data itself when it is no JSON object.
func (p *eventPrinter) fields(data []byte, now time.Time, name *string) string {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeOrdered(d)
	o, ok := v.(*object)
	if err != nil || !ok || d.More() {
		return strings.TrimSpace(strings.ReplaceAll(string(data), "\n", `\n`))
	}
	r := renderer{now: now}
	var parts []string
	for _, k := range o.keys {
		val := o.vals[k]
		if k == "type" && *name == "" {
			if s, ok := val.(string); ok {
				*name = s
				continue
			}
		}
		raw := compact(val)
		if prev, seen := p.last[k]; seen && prev == raw && repeats(k) {
			continue
		}
		p.last[k] = raw
		var s string
		switch x := val.(type) {
		case *object, []any:
			s = cut(raw, maxEventValue) // JSON reads as one word already
		case string:
			if x == "" {
				s = `""` // an empty payload is not "no value" here
				break
			}
			s = quoteIfNeeded(cut(r.scalar(val, false), maxEventValue))
		default:
			s = quoteIfNeeded(cut(r.scalar(val, false), maxEventValue))
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, " ")
}

// repeats says whether a field is left out when unchanged: identifiers of
// the stream are, the content (data, seq, status…) never is.
func repeats(key string) bool {
	switch strings.ToLower(key) {
	case "requestid", "request_id", "platform", "clientid", "client_id", "sessionid", "session_id", "conversationid", "conversation_id":
		return true
	}
	return false
}

// quoteIfNeeded quotes a value that would not read as one word.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\r\"=\\") {
		return strconv.Quote(s)
	}
	return s
}

// elapsed says a duration since a stream began: "0.4s", "12s", "3m05s".
func elapsed(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
