package bridgeproto

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestInjectResultDedupFields: a malformed delivery_key or duplicate in
// inject_result is refused as invalid_field; the answers of a plugin that
// dedups (and of one that ignores the key) pass and decode.
func TestInjectResultDedupFields(t *testing.T) {
	refused := []struct{ raw, field string }{
		{`{"type":"inject_result","inject_id":"i1","ok":true,"duplicate":true,"delivery_key":"renewal:job 1"}`, "delivery_key"},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_key":"` + strings.Repeat("k", 129) + `"}`, "delivery_key"},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_key":"renewal/job-1"}`, "delivery_key"},
		{`{"type":"inject_result","inject_id":"i1","ok":false,"duplicate":true,"error":{"code":"c","message":"m"}}`, "duplicate"},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"duplicate":"yes"}`, ""},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"duplicate":1}`, ""},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_key":7}`, ""},
	}
	for _, tc := range refused {
		_, err := Parse([]byte(tc.raw))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Code != "invalid_field" || pe.Field != tc.field || pe.RefType != TypeInjectResult {
			t.Fatalf("%.100s: got %+v, want invalid_field on %q", tc.raw, pe, tc.field)
		}
		if strings.Contains(pe.Message, "kkkk") {
			t.Fatalf("refusal quotes the value: %s", pe.Message)
		}
	}
	m, err := Parse([]byte(`{"type":"inject_result","inject_id":"i1","ok":true,"duplicate":true,"delivery_key":"renewal:job-3.abc"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := m.(*InjectResult); !r.Duplicate || r.DeliveryKey != "renewal:job-3.abc" {
		t.Fatalf("decoded %+v", r)
	}
	m, err = Parse([]byte(`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":1,"status_code":200}}`))
	if err != nil || m.(*InjectResult).Duplicate {
		t.Fatalf("a plain answer: %v %+v", err, m)
	}
}

func TestDeliveryKeys(t *testing.T) {
	for _, k := range []string{RenewalDeliveryKey("job-12", time.Unix(1700000000, 5)), ReportDeliveryKey("task-7", time.Unix(1700000000, 5)), "a", strings.Repeat("k", 128)} {
		if !ValidDeliveryKey(k) {
			t.Fatalf("%q refused", k)
		}
	}
	for _, k := range []string{"", "a b", "ü", "x\n", strings.Repeat("k", 129), "a/b"} {
		if ValidDeliveryKey(k) {
			t.Fatalf("%q accepted", k)
		}
	}
}
