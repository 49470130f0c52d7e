package bridgeproto

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseValidMessages(t *testing.T) {
	cases := map[string]string{
		TypeHello:         `{"type":"hello","token":"t","clientId":"c1","browser":"chrome"}`,
		TypeActionRequest: `{"type":"action_request","action":"pause","reason":"lunch"}`,
		TypeCredentials:   `{"type":"credentials","platform":"platform_a","account":"me","host":"a.example","headers":{"Authorization":"x"}}`,
		TypeAPIEndpoints:  `{"type":"api_endpoints","platform":"platform_b","endpoints":[{"method":"post","path":"/api/chat?token=abc"}]}`,
		TypeAPIResponse:   `{"type":"api_response","requestId":"r1","status":200,"body":"{}"}`,
		TypeStreamOpen:    `{"type":"stream_open","requestId":"r1","status":200}`,
		TypeStreamEvent:   `{"type":"stream_event","requestId":"r1","seq":1,"data":"x"}`,
		TypeStreamEnd:     `{"type":"stream_end","requestId":"r1"}`,
		TypeStreamEvents:  `{"type":"stream_events","requestId":"r1","events":[{"seq":1,"event":"message","data":"x"},{"seq":2,"data":""}]}`,
		TypeStreamError:   `{"type":"stream_error","requestId":"r1","message":"boom"}`,
		TypeActionResult:  `{"type":"action_result","actionId":"a1","accepted":true,"result":{"x":1}}`,
		TypeShellRuntime:  `{"type":"shell_runtime","shell_runtime":{"tabs":1}}`,
		TypeKeepalive:     `{"type":"keepalive","ts":1}`,
	}
	for typ, raw := range cases {
		m, err := Parse([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if m.MsgType() != typ {
			t.Fatalf("%s parsed as %s", typ, m.MsgType())
		}
	}
	m, _ := Parse([]byte(cases[TypeStreamEvents]))
	if got := m.(*StreamEvents).Split(); len(got) != 2 || got[0].RequestID != "r1" || got[0].Seq != 1 || got[0].Event != "message" || got[0].Data != "x" || got[1].Seq != 2 {
		t.Fatalf("stream_events split: %+v %+v", got[0], got[1])
	}
	m, _ = Parse([]byte(cases[TypeHello]))
	if m.(*Hello).Has(CapStreamEvents) {
		t.Fatal("a hello without capabilities has stream_events")
	}
	m, _ = Parse([]byte(`{"type":"hello","token":"t","clientId":"c1","capabilities":["x","stream_events"]}`))
	if !m.(*Hello).Has(CapStreamEvents) {
		t.Fatal("the hello's stream_events capability not seen")
	}
	m, _ = Parse([]byte(cases[TypeAPIEndpoints]))
	ep := m.(*APIEndpoints).Endpoints[0]
	if ep.Path != "/api/chat" || ep.Method != "POST" {
		t.Fatalf("endpoint not normalised: %+v", ep)
	}
}

// "type" is found wherever it is, in any letter case, like encoding/json
// matches field names.
func TestParseTypeAnywhere(t *testing.T) {
	for _, raw := range []string{`{"x":{"type":"nope"},"type":"keepalive"}`, `{"TYPE":"keepalive"}`, ` {"type":"keepalive"} `,
		`{ "type" : "keepalive" }`, `{"type":"keep\u0061live"}`, `{"type" :"keepalive","ts":1}`} {
		if m, err := Parse([]byte(raw)); err != nil || m.MsgType() != TypeKeepalive {
			t.Fatalf("%s: %v %v", raw, m, err)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	cases := map[string]string{
		`not json`:                        "malformed_json",
		`[]`:                              "malformed_json",
		`{}`:                              "missing_type",
		`{"type":7}`:                      "missing_type",
		`{"type":"nope"}`:                 "unknown_type",
		`{"type":"hello","clientId":"c"}`: "missing_field",
		`{"type":"hello","token":"t","clientId":"a b"}`:  "invalid_field",
		`{"type":"hello","token":"t","clientId":"c1/x"}`: "invalid_field",
		// Pairing (issue 25): exactly one authenticator, each bounded.
		`{"type":"hello","token":"t","code":"ABCD-EFGH","clientId":"c1"}`:    "invalid_field",
		`{"type":"hello","code":"A\u0001B","clientId":"c1"}`:                 "invalid_field",
		`{"type":"hello","credential":"a b","clientId":"c1"}`:                "invalid_field",
		`{"type":"hello","code":"","credential":"","clientId":"c1"}`:         "missing_field",
		`{"type":"action_request","action":"explode"}`:                       "invalid_action",
		`{"type":"credentials","platform":"platform_z","headers":{"a":"b"}}`: "invalid_platform",
		`{"type":"credentials","platform":"platform_a"}`:                     "missing_field",
		`{"type":"api_response","requestId":"r","status":42}`:                "invalid_field",
		`{"type":"stream_event","requestId":"r","seq":"x"}`:                  "invalid_field",
		`{"type":"keepalive"} {"type":"keepalive"}`:                          "malformed_json",
		// Batched events (capability stream_events): at least one, each valid.
		`{"type":"stream_events","requestId":"r","events":[]}`:                            "invalid_field",
		`{"type":"stream_events","requestId":"r"}`:                                        "invalid_field",
		`{"type":"stream_events","events":[{"seq":1,"data":"x"}]}`:                        "missing_field",
		`{"type":"stream_events","requestId":"r","events":[{"seq":-1,"data":"x"}]}`:       "invalid_field",
		`{"type":"stream_events","requestId":"r","events":[{"seq":1,"event":"a\u0001"}]}`: "invalid_field",
		`{"type":"stream_events","requestId":"r","events":{"seq":1}}`:                     "invalid_field",
		`{"type":"hello","token":"t","clientId":"c1","capabilities":["a\u0001"]}`:         "invalid_field",
		// Parse reads "type" first and decodes once (issue 15): truncation
		// after it is still malformed JSON, and a second "type" that JSON's
		// last-wins would apply is refused rather than decoded as the first.
		`{"type":"keepalive"`:                                         "malformed_json",
		`{"type":"keepalive",}`:                                       "malformed_json",
		`{"a":[1,{"b":2}],"type":7}`:                                  "missing_type",
		`{"type":"keepalive","type":"api_response"}`:                  "invalid_field",
		`{"type":"api_response","TYPE":"keepalive"}`:                  "invalid_field",
		`{"a":"x","type":"api_response","requestId":"r","status":42}`: "invalid_field",
	}
	for raw, code := range cases {
		_, err := Parse([]byte(raw))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: want ParseError, got %v", raw, err)
		}
		if pe.Code != code {
			t.Fatalf("%s: code %s, want %s (%s)", raw, pe.Code, code, pe.Message)
		}
	}
}

// A refused credentials message must not echo its secret values.
func TestParseErrorNeverQuotesValues(t *testing.T) {
	const secret = "CANARY-5f1e2d"
	raws := []string{
		`{"type":"credentials","platform":"bad","headers":{"cookie":"` + secret + `"}}`,
		`{"type":"credentials","platform":"platform_a","host":"x/` + secret + `","headers":{"cookie":"` + secret + `"}}`,
		`{"type":"credentials","platform":"platform_a","headers":{"cookie":1,"x":"` + secret + `"}}`,
		`{"type":"hello","token":"` + secret + `","clientId":"` + secret + ` x"}`,
	}
	for _, raw := range raws {
		_, err := Parse([]byte(raw))
		if err == nil {
			t.Fatalf("accepted %s", raw)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error quotes the secret: %v", err)
		}
	}
}

func TestCredentialMetadata(t *testing.T) {
	a := &Credentials{Headers: map[string]string{"Authorization": "Bearer x", "X-A": "1"}, Cookies: map[string]string{"sid": "s"}}
	b := &Credentials{Headers: map[string]string{"x-a": "1", "authorization": "Bearer x"}, Cookies: map[string]string{"sid": "s"}}
	c := &Credentials{Headers: map[string]string{"x-a": "1", "authorization": "Bearer y"}, Cookies: map[string]string{"sid": "s"}}
	ma, mb, mc := a.Metadata(), b.Metadata(), c.Metadata()
	if ma.Fingerprint != mb.Fingerprint {
		t.Fatal("same login, different fingerprints")
	}
	if ma.Fingerprint == mc.Fingerprint {
		t.Fatal("different logins, same fingerprint")
	}
	if ma.HeaderCount != 2 || ma.CookieCount != 1 || strings.Join(ma.HeaderNames, ",") != "authorization,x-a" {
		t.Fatalf("meta %+v", ma)
	}
	// The same login seen by network capture: the browser's own headers
	// come as names without a value; they are listed and counted, and the
	// fingerprint stays the page-side capture's (issue 36).
	n := &Credentials{Headers: map[string]string{"Authorization": "Bearer x", "X-A": "1", "User-Agent": "", "sec-ch-ua": ""}, Cookies: map[string]string{"sid": "s"}}
	mn := n.Metadata()
	if mn.Fingerprint != ma.Fingerprint {
		t.Fatal("names without a value changed the fingerprint")
	}
	if mn.HeaderCount != 4 || strings.Join(mn.HeaderNames, ",") != "authorization,sec-ch-ua,user-agent,x-a" {
		t.Fatalf("meta %+v", mn)
	}
	enc, _ := json.Marshal(ma)
	if strings.Contains(string(enc), "Bearer") {
		t.Fatal("metadata carries a value")
	}
	a.Scrub()
	if a.Headers != nil || a.Cookies != nil {
		t.Fatal("scrub kept values")
	}
}

func TestSafeHeaders(t *testing.T) {
	got := SafeHeaders(map[string]string{"Content-Type": "text/plain", "Set-Cookie": "sid=1", "Retry-After": "2", "X-Session": "s"})
	if len(got) != 2 || got["content-type"] != "text/plain" || got["retry-after"] != "2" {
		t.Fatalf("got %v", got)
	}
}

func TestNormalizeWSReconnect(t *testing.T) {
	raw := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	got, err := NormalizeWSReconnect(raw(`{"delay_ms":500,"repeat_count":2,"interval_ms":100,"other":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got["disconnectMs"] != int64(500) || got["repeatCount"] != int64(2) || got["repeatIntervalMs"] != int64(100) || len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	for _, alias := range []string{"disconnectMs", "disconnect_ms", "delayMs", "delay_ms"} {
		got, err := NormalizeWSReconnect(raw(`{"` + alias + `":7}`))
		if err != nil || got["disconnectMs"] != int64(7) {
			t.Fatalf("%s: %v %v", alias, got, err)
		}
	}
	if _, err := NormalizeWSReconnect(raw(`{"delayMs":1,"disconnect_ms":2}`)); err == nil {
		t.Fatal("conflicting aliases accepted")
	}
	if _, err := NormalizeWSReconnect(raw(`{"repeatCount":-1}`)); err == nil {
		t.Fatal("negative accepted")
	}
}

func TestPeekType(t *testing.T) {
	for raw, want := range map[string]string{
		`{"type":"api_request","requestId":"r"}`: "api_request",
		` { "type" : "keepalive" }`:              "keepalive",
		`{"requestId":"r","type":"api_request"}`: "", // not first: decode to find it
		`{"TYPE":"keepalive"}`:                   "",
		`{"type":"keep\u0061live"}`:              "",
		`{"type":""}`:                            "",
		`{"type":7}`:                             "",
		`{"type":"unterminated`:                  "",
		`not json`:                               "",
	} {
		if got := PeekType([]byte(raw)); got != want {
			t.Errorf("PeekType(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestFastDecodeTakesWhatSendersWrite: the frames json.Marshal (and so the
// fake plugin and a page's JSON.stringify) writes go the fast way, with the
// same result as the general decode; FuzzFastDecode covers the rest.
func TestFastDecodeTakesWhatSendersWrite(t *testing.T) {
	for _, v := range []validator{
		&APIResponse{Type: TypeAPIResponse, RequestID: "req_1", Status: 200,
			Headers: map[string]string{"Content-Type": "application/json", "X-A": "<b>&"}, Body: "{\"ok\":true}\n\u2028é"},
		&APIResponse{Type: TypeAPIResponse, RequestID: "req_2", Error: "upstream failed"},
		&StreamEvent{Type: TypeStreamEvent, RequestID: "req_3", Seq: 12345678901, Event: "delta", Data: "chunk \"1\""},
		&StreamEvent{Type: TypeStreamEvent, RequestID: "req_4"},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := fastDecode(v.MsgType(), data)
		if got == nil {
			t.Fatalf("%s: fast decode gave up", data)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("%s: fast decode %#v, want %#v", data, got, v)
		}
		if m, err := Parse(data); err != nil || !reflect.DeepEqual(m, v) {
			t.Fatalf("%s: Parse %#v, %v", data, m, err)
		}
	}
}
