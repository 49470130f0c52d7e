package bridgeproto

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes the parser panic, that an accepted
// message re-encodes as JSON of its own type, and that a refusal never
// quotes the marker value planted in the input (ref_id may echo a
// request id, which is an identifier, not a value).
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"hello","token":"t","clientId":"c1"}`))
	f.Add([]byte(`{"type":"credentials","platform":"platform_a","headers":{"cookie":"SECRETV"}}`))
	f.Add([]byte(`{"type":"api_endpoints","platform":"platform_b","endpoints":[{"path":"/x?SECRETV"}]}`))
	f.Add([]byte(`{"type":"stream_event","requestId":"r","seq":3,"data":"d"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if m != nil {
				t.Fatal("message and error together")
			}
			if strings.Contains(err.Error(), "SECRETV") {
				t.Fatalf("error quotes input value: %v", err)
			}
			var pe *ParseError
			if errors.As(err, &pe) && strings.Contains(pe.RefType, "SECRETV") {
				t.Fatalf("error refers to input value: %+v", pe)
			}
			return
		}
		enc, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("accepted message does not re-encode: %v", err)
		}
		var head struct{ Type string }
		if json.Unmarshal(enc, &head) != nil || head.Type != m.MsgType() {
			t.Fatalf("re-encoded type %q, want %q", head.Type, m.MsgType())
		}
	})
}
