package hostops

import (
	"strings"
	"testing"
)

func TestParseRlimits(t *testing.T) {
	got, err := ParseRlimits(" cpu=10, nofile=256 ,as=1073741824")
	if err != nil {
		t.Fatal(err)
	}
	if got["cpu"] != 10 || got["nofile"] != 256 || got["as"] != 1<<30 || len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	if s := FormatRlimits(got); s != "as=1073741824,cpu=10,nofile=256" {
		t.Fatalf("format: %q", s)
	}
	for _, bad := range []string{"cpu", "cpu=x", "cpu=-1", "nope=1", "cpu=1,cpu=2", "=5"} {
		if _, err := ParseRlimits(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if m, err := ParseRlimits(""); err != nil || len(m) != 0 {
		t.Fatalf("empty: %v %v", m, err)
	}
}

// FuzzParseRlimits: the parser never panics, and whatever it accepts
// survives a format/parse round trip unchanged.
func FuzzParseRlimits(f *testing.F) {
	for _, s := range []string{"cpu=10", "cpu=10,nofile=256", " as = 1 ", "nproc=0,core=0", "x=1", "cpu=18446744073709551615", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseRlimits(s)
		if err != nil {
			return
		}
		if err := ValidateRlimits(m); err != nil {
			t.Fatalf("accepted %q but invalid: %v", s, err)
		}
		back, err := ParseRlimits(FormatRlimits(m))
		if err != nil {
			t.Fatalf("round trip of %q: %v", s, err)
		}
		if len(back) != len(m) {
			t.Fatalf("round trip of %q: %v != %v", s, back, m)
		}
		for k, v := range m {
			if back[k] != v || strings.ContainsAny(k, "=,") {
				t.Fatalf("round trip of %q: %v != %v", s, back, m)
			}
		}
	})
}
