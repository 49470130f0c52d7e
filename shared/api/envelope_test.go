package api

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"
)

// A body started by OKBody, put together from AppendJSON pieces and
// written by WriteOKBody is byte for byte what WriteOK writes for the value,
// headers included: HTML characters unescaped, U+2028 and invalid UTF-8
// escaped as encoding/json does, times and nested values as they encode.
func TestWriteOKBodyIsWriteOK(t *testing.T) {
	type inner struct {
		At   time.Time `json:"at"`
		Note string    `json:"note,omitempty"`
	}
	values := []any{
		map[string]any{},
		[]int{},
		"<a href=\"x\">&amp;</a>\u2028\u2029\x00\xff",
		map[string]any{"items": []inner{{At: time.Date(2026, 11, 27, 2, 0, 0, 123, time.UTC), Note: "<&>"}}, "count": 1, "next_cursor": "YWJj"},
		inner{At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))},
	}
	for _, v := range values {
		want := httptest.NewRecorder()
		WriteOK(want, v)
		data, err := AppendJSON([]byte("junk"), v)
		if err != nil {
			t.Fatal(err)
		}
		got := httptest.NewRecorder()
		WriteOKBody(got, append(OKBody(1), bytes.TrimPrefix(data, []byte("junk"))...))
		if got.Body.String() != want.Body.String() || got.Code != want.Code ||
			got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Fatalf("%#v:\nWriteOKBody %d %q %q\nWriteOK        %d %q %q", v, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}
