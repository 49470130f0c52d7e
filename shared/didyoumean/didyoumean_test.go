package didyoumean

import "testing"

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"listen", "listen", 0}, {"lisen", "listen", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		if got := EditDistance(c.a, c.b); got != c.d {
			t.Errorf("EditDistance(%q,%q)=%d want %d", c.a, c.b, got, c.d)
		}
	}
}

func TestNearest(t *testing.T) {
	cands := []string{"status", "system", "snapshot", "timeout-ms", "format", "exec"}
	for _, c := range []struct {
		word, want string
		ok         bool
	}{
		{"stauts", "status", true}, {"fromat", "format", true}, {"timeout", "timeout-ms", true},
		{"snapshto", "snapshot", true}, {"exce", "exec", true},
		{"zzzzzzzzzz", "", false}, {"renewals-everything", "", false},
	} {
		got, ok := Nearest(c.word, cands)
		if got != c.want || ok != c.ok {
			t.Errorf("Nearest(%q) = %q, %v; want %q, %v", c.word, got, ok, c.want, c.ok)
		}
	}
}
