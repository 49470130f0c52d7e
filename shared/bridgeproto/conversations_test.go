package bridgeproto

import (
	"errors"
	"strings"
	"testing"
)

func TestParseConversationMessages(t *testing.T) {
	link, err := Parse([]byte(`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"conv-1.a:b_c","remote_conversation_id":"r-9","url":"https://a.example/c/r-9","title":"Renewal"}`))
	if err != nil {
		t.Fatal(err)
	}
	if l := link.(*ConversationLink); l.LocalConversationID != "conv-1.a:b_c" || l.URL == "" {
		t.Fatalf("link: %+v", l)
	}
	msg, err := Parse([]byte(`{"type":"conversation_message","platform":"platform_b","local_conversation_id":"c1","remote_conversation_id":"r1","message_id":"m1","text":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := msg.(*ConversationMessage); m.Role != RoleAssistant || m.Text != "hello" {
		t.Fatalf("role not defaulted: %+v", m)
	}
	res, err := Parse([]byte(`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":1,"status_code":200}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*InjectResult); r.DeliveryAck.Level != DeliveryAnswered || r.DeliveryAck.StatusCode != 200 {
		t.Fatalf("inject_result: %+v", r)
	}
	if _, err := Parse([]byte(`{"type":"inject_result","inject_id":"i2","ok":false,"error":{"code":"no_input_box","message":"input box not found"}}`)); err != nil {
		t.Fatal(err)
	}
	// The daemon sends conversation_inject; a plugin never may.
	if _, err := Parse([]byte(`{"type":"conversation_inject","inject_id":"i1","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","kind":"renewal","text":"x"}`)); err == nil {
		t.Fatal("conversation_inject accepted inbound")
	}
}

func TestParseConversationRefusals(t *testing.T) {
	big := strings.Repeat("x", MaxMessageTextLen+1)
	cases := []struct{ raw, code, field string }{
		{`{"type":"conversation_link","local_conversation_id":"c1","remote_conversation_id":"r1"}`, "missing_field", "platform"},
		{`{"type":"conversation_link","platform":"platform_z","local_conversation_id":"c1","remote_conversation_id":"r1"}`, "invalid_platform", "platform"},
		{`{"type":"conversation_link","platform":"platform_a","remote_conversation_id":"r1"}`, "missing_field", "local_conversation_id"},
		{`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"c 1","remote_conversation_id":"r1"}`, "invalid_field", "local_conversation_id"},
		{`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"c/1","remote_conversation_id":"r1"}`, "invalid_field", "local_conversation_id"},
		{`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"` + strings.Repeat("a", 129) + `","remote_conversation_id":"r1"}`, "invalid_field", "local_conversation_id"},
		{`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"c1"}`, "missing_field", "remote_conversation_id"},
		{`{"type":"conversation_link","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","url":"a b"}`, "invalid_field", "url"},
		{`{"type":"conversation_message","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","text":"x"}`, "missing_field", "message_id"},
		{`{"type":"conversation_message","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","message_id":"m1","text":"` + big + `"}`, "invalid_field", "text"},
		{`{"type":"conversation_message","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","message_id":"m1","text":"x","role":"system"}`, "invalid_field", "role"},
		{`{"type":"conversation_message","platform":"platform_a","local_conversation_id":"c1","remote_conversation_id":"r1","message_id":"m1","text":7}`, "invalid_field", ""},
		{`{"type":"inject_result","ok":true,"delivery_ack":{"level":1}}`, "missing_field", "inject_id"},
		{`{"type":"inject_result","inject_id":"i1","ok":true}`, "missing_field", "delivery_ack"},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":2}}`, "invalid_field", "delivery_ack"},
		{`{"type":"inject_result","inject_id":"i1","ok":true,"delivery_ack":{"level":1,"status_code":99}}`, "invalid_field", "delivery_ack.status_code"},
		{`{"type":"inject_result","inject_id":"i1","ok":false}`, "missing_field", "error"},
		{`{"type":"inject_result","inject_id":"i1","ok":false,"error":{"message":"m"}}`, "missing_field", "error.code"},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.raw))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("%.120s: want ParseError, got %v", tc.raw, err)
		}
		if pe.Code != tc.code || pe.Field != tc.field {
			t.Fatalf("%.120s: got %s/%s, want %s/%s", tc.raw, pe.Code, pe.Field, tc.code, tc.field)
		}
		if strings.Contains(pe.Message, "xxxx") {
			t.Fatal("refusal quotes the text")
		}
	}
}

func TestConversationInjectValidate(t *testing.T) {
	ok := ConversationInject{Type: TypeConversationInject, InjectID: "i1", Platform: PlatformA, LocalConversationID: "c1", RemoteConversationID: "r1", Kind: InjectRenewal, Text: "continue"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*ConversationInject){
		"kind":     func(m *ConversationInject) { m.Kind = "chat" },
		"text":     func(m *ConversationInject) { m.Text = "" },
		"local":    func(m *ConversationInject) { m.LocalConversationID = "a b" },
		"injectid": func(m *ConversationInject) { m.InjectID = "" },
	} {
		m := ok
		mut(&m)
		if m.Validate() == nil {
			t.Fatalf("%s: bad inject accepted", name)
		}
	}
}
