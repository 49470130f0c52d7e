package bridgeproto

import (
	"strings"
	"testing"
)

// A hello with a code or a credential parses; the credential and scopes of
// hello_ok re-encode under the documented names.
func TestHelloWithCodeOrCredential(t *testing.T) {
	for _, raw := range []string{
		`{"type":"hello","code":"K7QM-2XRT","clientId":"c1","browser":"chrome"}`,
		`{"type":"hello","credential":"svcb_AbC-123_x","clientId":"c1"}`,
	} {
		m, err := Parse([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		h := m.(*Hello)
		if h.Code == "" && h.Credential == "" {
			t.Fatalf("%s: lost the authenticator: %+v", raw, h)
		}
	}
	if _, err := Parse([]byte(`{"type":"hello","credential":"` + strings.Repeat("x", MaxCredentialLen+1) + `","clientId":"c1"}`)); err == nil {
		t.Fatal("over-long credential accepted")
	}
}
