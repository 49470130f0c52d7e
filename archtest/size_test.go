package archtest

import (
	"os"
	"strings"
	"testing"
)

// AllowListFile is the list of long files and functions that stay, each
// with its reason, beside this test.
const AllowListFile = "size_allow.txt"

// TestSizes fails on a non-test, non-generated file over MaxFileLines or a
// function over MaxFuncLines that size_allow.txt does not explain, and on
// an allow-list line that no longer matches anything (a split landed: drop it).
func TestSizes(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	long, err := LongParts(root)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(AllowListFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	allow, err := ParseAllowList(f)
	if err != nil {
		t.Fatalf("%s: %v", AllowListFile, err)
	}
	unexplained, stale := CheckSizes(long, allow)
	for _, l := range unexplained {
		limit := MaxFileLines
		if l.Func != "" {
			limit = MaxFuncLines
		}
		t.Errorf("%s is %d lines (limit %d): split it, or add %q to archtest/%s", l.Key(), l.Lines, limit, l.Key()+AllowSeparator+"<why it stays>", AllowListFile)
	}
	for _, a := range stale {
		t.Errorf("archtest/%s:%d: %s is no longer over its limit (or gone): drop the line", AllowListFile, a.Line, a.Key)
	}
}

func TestParseAllowList(t *testing.T) {
	good := "# comment\n\nsupervisor/x.go — a reason\nworkers/y.go:Local.Exec —  another reason \n"
	got, err := ParseAllowList(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "supervisor/x.go" || got[1].Key != "workers/y.go:Local.Exec" || got[1].Reason != "another reason" || got[1].Line != 4 {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{
		"supervisor/x.go\n",
		"supervisor/x.go — \n",
		"supervisor/x.go - a hyphen is not the separator\n",
		"a b.go — spaces in the key\n",
		" — no key\n",
		"x.go — one\nx.go — twice\n",
	} {
		if _, err := ParseAllowList(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: err %v, want an error naming the line", bad, err)
		}
	}
}

func TestCheckSizesFlagsUnexplainedAndStale(t *testing.T) {
	long := []Long{{File: "a.go", Lines: 600}, {File: "b.go", Func: "T.M", Lines: 150}}
	allow := []Allowance{{Key: "b.go:T.M", Reason: "r"}, {Key: "c.go", Reason: "r"}}
	unexplained, stale := CheckSizes(long, allow)
	if len(unexplained) != 1 || unexplained[0].Key() != "a.go" {
		t.Errorf("unexplained %+v, want a.go", unexplained)
	}
	if len(stale) != 1 || stale[0].Key != "c.go" {
		t.Errorf("stale %+v, want c.go", stale)
	}
}

func FuzzParseAllowList(f *testing.F) {
	f.Add("supervisor/x.go — a reason\n")
	f.Add("# c\n\nw/y.go:T.M — r\nw/y.go:T.M — r\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAllowList(strings.NewReader(s))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, a := range got {
			if a.Key == "" || a.Reason == "" || strings.ContainsAny(a.Key, " \t") || seen[a.Key] {
				t.Fatalf("accepted %+v from %q", a, s)
			}
			seen[a.Key] = true
		}
	})
}
