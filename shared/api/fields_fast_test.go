package api

import (
	"encoding/json"
	"testing"
)

// allKnown may only say "all known" when the full check agrees: for any
// valid JSON object, true means every key json.Unmarshal finds is known.
func FuzzAllKnown(f *testing.F) {
	for _, s := range []string{
		`{"platform":"a","path":"/x"}`,
		`{"platform":{"evil":1},"path":["x",{"evil":2}]}`,
		`{"platform":"a\"evil\":1,","path":"\\"}`,
		`{"\u0065vil":1}`,
		`{"Platform":"a"}`,
		`{"platform":"a","evil":1}`,
		`{"path":"x"} `,
		`[{"evil":1}]`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	known := map[string]struct{}{"platform": {}, "path": {}}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fields map[string]json.RawMessage
		if json.Unmarshal(body, &fields) != nil || !allKnown(body, known) {
			return
		}
		for name := range fields {
			if _, ok := known[name]; !ok {
				t.Fatalf("allKnown passed %s with unknown key %q", body, name)
			}
		}
	})
}

func TestAllKnownFastPath(t *testing.T) {
	known := map[string]struct{}{"platform": {}, "path": {}}
	for body, want := range map[string]bool{
		`{"platform":"a","path":"/x"}`:                    true,
		`{"platform":{"evil":1},"path":["x",{"evil":2}]}`: true,
		`{"platform":"a\"evil\":1,","path":"\\"}`:         true,
		`{"platform":"a","evil":1}`:                       false,
		`{"Platform":"a"}`:                                false,
		`{"\u0070ath":"x"}`:                               false, // escaped: the full check decides
		`[{"path":1}]`:                                    false,
		`{"path":"unterminated}`:                          false,
	} {
		if got := allKnown([]byte(body), known); got != want {
			t.Errorf("allKnown(%s) = %v, want %v", body, got, want)
		}
	}
}
