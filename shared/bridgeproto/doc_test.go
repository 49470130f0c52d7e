package bridgeproto

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The protocol document must stay true to the code: every ```json example in
// docs/bridge-protocol.md decodes with the daemon's own types (inbound ones
// through the validating parser, outbound ones strictly, unknown fields
// refused), every message type has an example, and the fingerprint worked
// example is what the code computes.

const protocolDoc = "../../docs/bridge-protocol.md"

// outbound maps each daemon → plugin type to the struct the daemon sends.
func outbound() map[string]func() any {
	return map[string]func() any{
		TypeHelloOK:             func() any { return &HelloOK{} },
		TypeStateSnapshot:       func() any { return &StateSnapshot{} },
		TypeActionRequestResult: func() any { return &ActionRequestResult{} },
		TypeAPIRequest:          func() any { return &APIRequest{} },
		TypeRequestCancel:       func() any { return &RequestCancel{} },
		TypeAction:              func() any { return &Action{} },
		TypeError:               func() any { return &Error{} },
		TypeConversationInject:  func() any { return &ConversationInject{} },
	}
}

var jsonBlock = regexp.MustCompile("(?s)```json\n(.*?)\n```")

func TestProtocolDocExamplesDecode(t *testing.T) {
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	blocks := jsonBlock.FindAllSubmatch(doc, -1)
	if len(blocks) < 20 {
		t.Fatalf("only %d json examples in %s", len(blocks), protocolDoc)
	}
	out := outbound()
	for _, b := range blocks {
		raw := b[1]
		var head struct {
			Type *string          `json:"type"`
			OK   *json.RawMessage `json:"ok"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			t.Errorf("example is not JSON (%v):\n%s", err, raw)
			continue
		}
		switch {
		case head.Type == nil && head.OK != nil:
			// An HTTP answer: the envelope, checked for shape only.
			continue
		case head.Type == nil:
			t.Errorf("example without type:\n%s", raw)
			continue
		}
		typ := *head.Type
		seen[typ] = true
		if mk, ok := out[typ]; ok {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(mk()); err != nil {
				t.Errorf("outbound %s example does not decode strictly: %v\n%s", typ, err, raw)
			}
			continue
		}
		m, err := Parse(raw)
		if err != nil {
			t.Errorf("inbound %s example is refused by the parser: %v\n%s", typ, err, raw)
			continue
		}
		if m.MsgType() != typ {
			t.Errorf("example of %s parsed as %s", typ, m.MsgType())
		}
	}
	for _, typ := range allTypes() {
		if !seen[typ] {
			t.Errorf("%s has no example in %s", typ, protocolDoc)
		}
	}
}

// allTypes is every message type the package defines.
func allTypes() []string {
	return []string{
		TypeHello, TypeHelloOK, TypeStateSnapshot, TypeActionRequest, TypeActionRequestResult,
		TypeCredentials, TypeAPIEndpoints, TypeAPIRequest, TypeAPIResponse, TypeStreamOpen,
		TypeStreamEvent, TypeStreamEvents, TypeStreamEnd, TypeStreamError, TypeRequestCancel, TypeAction,
		TypeActionResult, TypeShellRuntime, TypeKeepalive, TypeError,
		TypeConversationLink, TypeConversationMessage, TypeConversationInject, TypeInjectResult,
	}
}

func TestProtocolDocFingerprintExample(t *testing.T) {
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- fingerprint-example -->")
	if !ok {
		t.Fatal("the fingerprint worked example is gone from the document")
	}
	want := regexp.MustCompile("`(sha256:[0-9a-f]{64})`").FindStringSubmatch(after)
	if want == nil {
		t.Fatal("no fingerprint after the marker")
	}
	c := Credentials{
		Headers: map[string]string{"Authorization": "Bearer abc", "X-Csrf-Token": "t1"},
		Cookies: map[string]string{"sid": "s1"},
	}
	meta := c.Metadata()
	if meta.Fingerprint != want[1] {
		t.Fatalf("the document says %s, the code computes %s", want[1], meta.Fingerprint)
	}
	if strings.Join(meta.HeaderNames, ",") != "authorization,x-csrf-token" || meta.HeaderCount != 2 || meta.CookieCount != 1 {
		t.Fatalf("metadata %+v", meta)
	}
	// The document's second sentence: a name without a value is not hashed.
	c.Headers["Content-Type"] = ""
	named := c.Metadata()
	if named.Fingerprint != want[1] || named.HeaderCount != 3 || strings.Join(named.HeaderNames, ",") != "authorization,content-type,x-csrf-token" {
		t.Fatalf("with a valueless name: %+v", named)
	}
}
