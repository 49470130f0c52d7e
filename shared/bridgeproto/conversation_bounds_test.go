package bridgeproto

import (
	"errors"
	"strings"
	"testing"
)

// TestConversationFreeTextIsBounded: the free-text and status fields of
// inject_result and conversation_link are checked, naming the field; the
// answers the extension and the fake plugin send still pass.
func TestConversationFreeTextIsBounded(t *testing.T) {
	long := strings.Repeat("x", maxInjectText+1)
	refused := []struct{ raw, field string }{
		{`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":1,"status_code":42}}`, "delivery_ack.status_code"},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":1,"status_code":600}}`, "delivery_ack.status_code"},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":0,"detail":"` + long + `"}}`, "delivery_ack.detail"},
		{`{"type":"inject_result","inject_id":"i1","ok":false,"error":{"code":"bad code","message":"m"}}`, "error.code"},
		{`{"type":"inject_result","inject_id":"i1","ok":false,"error":{"code":"c","message":"` + long + `"}}`, "error.message"},
		{`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","url":"https://a.example/x y"}`, "url"},
		{`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","url":"https://a.example/\u0007"}`, "url"},
	}
	for _, tc := range refused {
		_, err := Parse([]byte(tc.raw))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Code != "invalid_field" || pe.Field != tc.field {
			t.Fatalf("%.100s: got %v, want invalid_field on %s", tc.raw, err, tc.field)
		}
		if strings.Contains(pe.Message, "xxxx") {
			t.Fatalf("refusal quotes the value: %s", pe.Message)
		}
	}
	for _, raw := range []string{
		`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":0}}`,
		`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":1,"status_code":200,"detail":"sent"}}`,
		`{"type":"inject_result","inject_id":"i1","ok":false,"error":{"code":"input_not_found","message":"the page has no input box"}}`,
		`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","url":"https://a.example/c/r1?x=1"}`,
	} {
		if _, err := Parse([]byte(raw)); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
}
