package bridgeproto

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
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
	f.Add([]byte(`{"type":"stream_events","requestId":"r","events":[{"seq":1,"event":"message","data":"SECRETV"},{"seq":2,"data":"d"}]}`))
	f.Add([]byte(`{"type":"hello","token":"t","clientId":"c1","capabilities":["stream_events"]}`))
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

// FuzzLeadingType: the byte-scan fast path for "type" must agree with the
// general walk on every input it accepts (Parse refuses invalid UTF-8 before
// either runs).
func FuzzLeadingType(f *testing.F) {
	f.Add([]byte(`{"type":"api_response","requestId":"r"}`))
	f.Add([]byte(` { "type" : "stream_event" , "seq":1}`))
	f.Add([]byte(`{"type":"a\"b"}`))
	f.Add([]byte(`{"type":"keepalive"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := leadingType(data)
		if !ok || !utf8.Valid(data) {
			return
		}
		slow, pe := typeOf(data)
		if pe != nil || slow != fast {
			t.Fatalf("%q: fast path %q, general walk %q (%v)", data, fast, slow, pe)
		}
	})
}

// FuzzFastDecode: the hand-written decoder of the hot frames either gives
// up or gives exactly what json.Unmarshal gives for the same input (Parse
// calls it only on valid UTF-8 whose first key is "type").
func FuzzFastDecode(f *testing.F) {
	f.Add([]byte(`{"type":"api_response","requestId":"r","status":200,"headers":{"Content-Type":"text/plain","a":"b"},"body":"{\"x\":\"\\u00e9\\n\"}"}`))
	f.Add([]byte(`{"type":"api_response","requestId":"r","status":0,"error":"boom","headers":{}}`))
	f.Add([]byte(` { "type" : "stream_event" , "requestId":"r","seq":-3,"event":"e","data":"d\ud800"} `))
	f.Add([]byte(`{"type":"stream_event","requestId":"r","seq":1.5,"data":"d"}`))
	f.Add([]byte(`{"type":"stream_event","requestId":"r","seq":007,"data":"d"}`))
	f.Add([]byte(`{"type":"api_response","requestId":"r","status":200,"headers":{"a":"1","a":"2"},"body":""}`))
	f.Add([]byte(`{"type":"api_response","requestId":"r","Status":200,"body":null}`))
	f.Add([]byte(`{"type":"stream_event","type":"stream_event","requestId":"r"}x`))
	f.Add([]byte(`{"type":"stream_event","requestId":"r","data":"\ud83d\ude00 \ud800x \udc00\ud800 \ud800\u0041 \/\b\f\t\r\n\\"}`))
	f.Add([]byte(`{"type":"stream_event","requestId":"r","data":"\u00zz"}`))
	f.Add([]byte(`{"type":"api_response","requestId":"r","status":200,"headers":{"k\u0041":"v\"x"},"body":"\ud800\ud800"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, ok := leadingType(data)
		if !ok || !utf8.Valid(data) {
			return
		}
		fast := fastDecode(typ, data)
		if fast == nil {
			return
		}
		general := inbound[typ]()
		if err := json.Unmarshal(data, general); err != nil {
			t.Fatalf("%q: fast decode took what json.Unmarshal refuses: %v", data, err)
		}
		if !reflect.DeepEqual(fast, general) {
			t.Fatalf("%q:\nfast    %#v\ngeneral %#v", data, fast, general)
		}
	})
}
