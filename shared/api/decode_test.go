package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type sample struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	Flag   bool   `json:"flag"`
}

func TestDecodeStatuses(t *testing.T) {
	cases := []struct {
		body   string
		max    int64
		status int
		code   string
	}{
		{`{"reason":"x","count":2}`, 0, 0, ""},
		{``, 0, 0, ""},
		{`   `, 0, 0, ""},
		{`{"extra":"refused"}`, 0, 422, "unknown_field"},
		{`{"Count":2}`, 0, 422, "unknown_field"},
		{`{"reason":"x","timeout_ms":5}`, 0, 422, "unknown_field"},
		{`{"reason":`, 0, 400, "malformed_json"},
		{`{} {}`, 0, 400, "malformed_json"},
		{`[]`, 0, 400, "malformed_json"},
		{`"str"`, 0, 400, "malformed_json"},
		{`{"reason":1}`, 0, 422, "invalid_field"},
		{`{"count":"x"}`, 0, 422, "invalid_field"},
		{`{"flag":"yes"}`, 0, 422, "invalid_field"},
		{`{"count":1.5}`, 0, 422, "invalid_field"},
		{`{"count":1e20}`, 0, 422, "invalid_field"},
		{`{"reason":"` + strings.Repeat("a", 100) + `"}`, 50, 413, "body_too_large"},
	}
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		var dst sample
		err := DecodeJSON(req, &dst, c.max)
		if c.status == 0 {
			if err != nil {
				t.Errorf("%q: %v", c.body, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Status != c.status || e.Code != c.code {
			t.Errorf("%q: err = %v, want %d %s", c.body, err, c.status, c.code)
		}
	}
}

func TestDecodeMessagesSayWhatIsWanted(t *testing.T) {
	for body, want := range map[string]string{
		`{"count":1e20}`:  `field "count" must be a whole number in range`,
		`{"count":"3"}`:   `field "count" must be a whole number in range, got string`,
		`{"reason":true}`: `field "reason" must be a string, got bool`,
		`{"flag":1}`:      `field "flag" must be a boolean, got number`,
	} {
		err := DecodeBytes([]byte(body), &sample{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

func TestDecodeHonoursMaxBytesReader(t *testing.T) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"reason":"`+strings.Repeat("a", 200)+`"}`))
	req.Body = http.MaxBytesReader(rec, req.Body, 64)
	var dst sample
	err := DecodeJSON(req, &dst, 1<<20)
	if e := AsError(err); e.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("err = %v, want 413", err)
	}
}

// FuzzDecodeBytes: any input either decodes or yields a 400/422 *Error; it
// never panics and never reports a non-client status.
func FuzzDecodeBytes(f *testing.F) {
	for _, s := range []string{`{}`, `{"reason":"x","count":1,"flag":true}`, `{"count":1e400}`, `{"reason":"\ud800"}`, `[`, `null`, `{"a":{"b":[1,2,{"c":null}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var dst sample
		err := DecodeBytes(body, &dst)
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("non-API error %T: %v", err, err)
		}
		if e.Status != 400 && e.Status != 422 {
			t.Fatalf("status %d for %q", e.Status, body)
		}
		if e.Code == "" || e.Message == "" {
			t.Fatalf("empty code or message: %+v", e)
		}
	})
}

func TestUnknownFieldNamesTheField(t *testing.T) {
	var dst sample
	err := DecodeBytes([]byte(`{"reason":"x","timeout_ms":5}`), &dst)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, `"timeout_ms"`) || !strings.Contains(e.Message, "count, flag, reason") {
		t.Fatalf("err = %v", err)
	}
	if dst.Reason != "" {
		t.Fatal("a refused body must not be decoded into the destination")
	}
	// A map destination takes any name: free-form options stay possible.
	var m map[string]any
	if err := DecodeBytes([]byte(`{"anything":1}`), &m); err != nil {
		t.Fatal(err)
	}
}
