package hostops

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestOutputText(t *testing.T) {
	for _, tc := range []struct {
		in        []byte
		truncated bool
		want      string
		lossy     bool
	}{
		{[]byte("plain"), false, "plain", false},
		{[]byte("a\xffb"), false, "a\uFFFDb", true},
		{[]byte("x€"[:3]), true, "x", false}, // cut inside € at the cap
		{[]byte("x€"[:3]), false, "x\uFFFD", true},
		{[]byte("€€"), true, "€€", false},
		{[]byte{}, true, "", false},
	} {
		got, lossy := OutputText(tc.in, tc.truncated)
		if got != tc.want || lossy != tc.lossy {
			t.Errorf("OutputText(%q, %v) = %q, %v; want %q, %v", tc.in, tc.truncated, got, lossy, tc.want, tc.lossy)
		}
	}
}

// FuzzOutputText: the text is always valid UTF-8, lossless input comes back
// unchanged, and a truncated cut drops at most three bytes.
func FuzzOutputText(f *testing.F) {
	for _, s := range []string{"", "hello", "a\xffb", "x\xe2\x82", "€", "\xf0\x9f\x98"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, truncated bool) {
		got, lossy := OutputText(b, truncated)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 out of %q", b)
		}
		if !lossy {
			if truncated {
				if !bytes.HasPrefix(b, []byte(got)) || len(b)-len(got) > 3 {
					t.Fatalf("truncated %q became %q", b, got)
				}
			} else if got != string(b) {
				t.Fatalf("lossless %q became %q", b, got)
			}
		}
	})
}
