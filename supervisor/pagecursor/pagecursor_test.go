package pagecursor

import (
	"reflect"
	"testing"
)

func TestRoundTripAndRefusals(t *testing.T) {
	for _, parts := range [][]string{{"", ""}, {"1700000000000000005", "conv.1"}, {"platform_a/c:1/a.b@x", ">" + "é\x00:9"}} {
		got, ok := Decode(Encode(parts...), len(parts))
		if !ok || !reflect.DeepEqual(got, parts) {
			t.Errorf("%q: decoded %q %v", parts, got, ok)
		}
		if _, ok := Decode(Encode(parts...), len(parts)+1); ok {
			t.Errorf("%q: read as %d parts", parts, len(parts)+1)
		}
		if _, ok := Decode(Encode(parts...)+"A", len(parts)); ok {
			t.Errorf("%q: a trailing byte is accepted", parts)
		}
	}
	for _, bad := range []string{"", "!!", "MTIzLmM", "MDE6YQ", "LTE6"} { // "", bad base64, "123.c", "01:a", "-1:"
		if p, ok := Decode(bad, 1); ok {
			t.Errorf("Decode(%q) = %q", bad, p)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode("1700000000000000005", "conv-1"), 2)
	f.Add(Encode(">platform_a/c/a", "="), 2)
	f.Add("MTIzLmM", 2)
	f.Add("", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 8 {
			return
		}
		parts, ok := Decode(s, n)
		if !ok {
			return
		}
		// What it accepts is what Encode makes of the parts.
		if again := Encode(parts...); again != s {
			t.Fatalf("%q decodes to %q, which encodes to %q", s, parts, again)
		}
	})
}
