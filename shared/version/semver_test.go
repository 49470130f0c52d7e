package version

import "testing"

func TestParseRelease(t *testing.T) {
	for in, want := range map[string]Release{
		"0.1.0-dev": {0, 1, 0}, "v0.2.1-rc1+abc": {0, 2, 1}, "0.1.0-dev+a72cca5c3f1e": {0, 1, 0}, "10.20.30": {10, 20, 30},
	} {
		if got, ok := ParseRelease(in); !ok || got != want {
			t.Errorf("ParseRelease(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "unknown", "1.2", "1.2.3.4", "01.2.3", "1.-2.3", "1.2.x", "1..3", "+1.2.3"} {
		if r, ok := ParseRelease(in); ok {
			t.Errorf("ParseRelease(%q) = %v, want not ok", in, r)
		}
	}
	a, _ := ParseRelease("0.2.0")
	b, _ := ParseRelease("0.1.9")
	if !a.NewerMinor(b) || b.NewerMinor(a) {
		t.Error("0.2.0 must be a newer minor than 0.1.9, not the reverse")
	}
	p, _ := ParseRelease("0.1.5")
	if p.NewerMinor(b) || b.NewerMinor(p) {
		t.Error("patch releases of one minor are not newer minors")
	}
}

func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"0.1.0-dev", "v1.2.3+x", "1.2", "01.1.1", "unknown"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := ParseRelease(s)
		if !ok {
			return
		}
		// What parses prints back to a string that parses to the same.
		if r2, ok2 := ParseRelease(r.String()); !ok2 || r2 != r {
			t.Fatalf("%q -> %v -> %q -> %v %v", s, r, r.String(), r2, ok2)
		}
		if r.NewerMinor(r) {
			t.Fatalf("%v newer than itself", r)
		}
	})
}
