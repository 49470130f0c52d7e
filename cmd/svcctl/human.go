package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Output formats (the global -format flag).
const (
	formatHuman = "human"
	formatJSON  = "json"
)

// object is a JSON object with its keys in the daemon's order, so a
// rendered block reads in the order SPEC.md lists the fields.
type object struct {
	keys []string
	vals map[string]any
}

// decodeOrdered parses one JSON value; objects become *object, the rest
// what encoding/json gives (json.Number for numbers).
func decodeOrdered(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(d)
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				if _, dup := o.vals[key]; !dup {
					o.keys = append(o.keys, key)
				}
				o.vals[key] = v
			}
			_, err := d.Token()
			return o, err
		case '[':
			arr := []any{}
			for d.More() {
				v, err := decodeOrdered(d)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := d.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

// renderHuman writes the envelope's data for people: an object as aligned
// "key: value" lines (nested objects indented), a list of objects as a
// table, times as "3s ago". It fails on anything that is not a JSON
// envelope, and the caller prints the raw bytes instead.
func renderHuman(w io.Writer, raw []byte, now time.Time) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	v, err := decodeOrdered(d)
	if err != nil {
		return err
	}
	env, ok := v.(*object)
	if !ok {
		return errors.New("not an envelope")
	}
	data, ok := env.vals["data"]
	if !ok {
		return errors.New("not an envelope")
	}
	// {"workers":[…]} and the like: the list is the answer, show the table.
	if o, ok := data.(*object); ok && len(o.keys) == 1 {
		if arr, ok := o.vals[o.keys[0]].([]any); ok && len(arr) > 0 {
			data = arr
		}
	}
	var buf bytes.Buffer
	r := renderer{now: now}
	switch x := data.(type) {
	case *object:
		r.block(&buf, x, "")
	case []any:
		r.list(&buf, x, "")
	default:
		fmt.Fprintln(&buf, r.scalar(x, true))
	}
	_, err = w.Write(buf.Bytes())
	return err
}

type renderer struct{ now time.Time }

// block writes an object's scalar fields aligned, then its nested
// objects and lists each under its key, indented.
func (r renderer) block(w *bytes.Buffer, o *object, indent string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var nested []string
	for _, k := range o.keys {
		switch v := o.vals[k].(type) {
		case *object:
			if len(v.keys) == 0 {
				fmt.Fprintf(tw, "%s%s:\t-\n", indent, k)
				continue
			}
			nested = append(nested, k)
		case []any:
			if s, ok := r.inline(v); ok {
				fmt.Fprintf(tw, "%s%s:\t%s\n", indent, k, s)
				continue
			}
			nested = append(nested, k)
		default:
			fmt.Fprintf(tw, "%s%s:\t%s%s\n", indent, k, r.scalar(v, true), millis(k, v))
		}
	}
	tw.Flush()
	for _, k := range nested {
		fmt.Fprintf(w, "%s%s:\n", indent, k)
		switch v := o.vals[k].(type) {
		case *object:
			r.block(w, v, indent+"  ")
		case []any:
			r.list(w, v, indent+"  ")
		}
	}
}

// inline says a list of scalars (or an empty list) in one line.
func (r renderer) inline(arr []any) (string, bool) {
	if len(arr) == 0 {
		return "(none)", true
	}
	parts := make([]string, 0, len(arr))
	for _, v := range arr {
		switch v.(type) {
		case *object, []any:
			return "", false
		}
		parts = append(parts, r.scalar(v, false))
	}
	return strings.Join(parts, ", "), true
}

// list writes a list of objects as a table whose columns are the fields
// in order of first appearance; a nested value shows as compact JSON.
func (r renderer) list(w *bytes.Buffer, arr []any, indent string) {
	if s, ok := r.inline(arr); ok {
		fmt.Fprintf(w, "%s%s\n", indent, s)
		return
	}
	var cols []string
	seen := map[string]bool{}
	for _, v := range arr {
		if o, ok := v.(*object); ok {
			for _, k := range o.keys {
				if !seen[k] {
					seen[k] = true
					cols = append(cols, k)
				}
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s%s\n", indent, strings.ToUpper(strings.Join(cols, "\t")))
	for _, v := range arr {
		o, ok := v.(*object)
		if !ok {
			fmt.Fprintf(tw, "%s%s\n", indent, r.scalar(v, false))
			continue
		}
		cells := make([]string, len(cols))
		for i, k := range cols {
			cv, has := o.vals[k]
			if !has {
				cells[i] = "-"
				continue
			}
			cells[i] = r.cell(cv)
		}
		fmt.Fprintf(tw, "%s%s\n", indent, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

// cell is one table cell: scalars as in a block, nested values as compact
// JSON cut to a readable width.
func (r renderer) cell(v any) string {
	switch x := v.(type) {
	case *object, []any:
		if arr, ok := x.([]any); ok {
			if s, ok := r.inline(arr); ok {
				return cut(s, 40)
			}
		}
		return cut(compact(x), 40)
	}
	return cut(strings.ReplaceAll(r.scalar(v, false), "\n", `\n`), 60)
}

// scalar says one value. Times read as "3s ago" (with the instant itself
// when long is set); a zero time is "never"; null is "-".
func (r renderer) scalar(v any, long bool) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil && len(x) >= 20 {
			if t.IsZero() {
				return "never"
			}
			if long {
				return x + " (" + relative(r.now, t) + ")"
			}
			return relative(r.now, t)
		}
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return compact(v)
}

// millis adds " (1.5s)" to a count of milliseconds, named so by the API
// (timeout_ms, durationMs).
func millis(key string, v any) string {
	n, ok := v.(json.Number)
	if !ok || !(strings.HasSuffix(key, "_ms") || strings.HasSuffix(key, "Ms")) {
		return ""
	}
	ms, err := n.Int64()
	if err != nil || ms < 1000 {
		return ""
	}
	return " (" + (time.Duration(ms) * time.Millisecond).String() + ")"
}

// relative says how far t is from now, in one unit: "3s ago", "in 2m".
func relative(now, t time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// compact re-encodes a decoded value as one-line JSON, keys in order.
func compact(v any) string {
	switch x := v.(type) {
	case *object:
		parts := make([]string, 0, len(x.keys))
		for _, k := range x.keys {
			kb, _ := json.Marshal(k)
			parts = append(parts, string(kb)+":"+compact(x.vals[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, compact(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func cut(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
