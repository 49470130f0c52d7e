package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureNamesExist checks that every Go name ARCHITECTURE.md
// cites in backticks (pkg.Func, (*pkg.Type).Method) is declared in the
// module, so a rename that forgets the map breaks the build's tests.
func TestArchitectureNamesExist(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	decls, err := ModuleDecls(root)
	if err != nil {
		t.Fatal(err)
	}
	names := GoNames(string(doc), decls.Packages)
	if len(names) < 40 {
		t.Fatalf("ARCHITECTURE.md cites only %d Go names: the walks name the functions on each path", len(names))
	}
	for _, n := range names {
		if !decls.Has(n) {
			t.Errorf("ARCHITECTURE.md cites `%s`, which the module does not declare (renamed or gone?)", n.Text)
		}
	}
	if lines := strings.Count(string(doc), "\n"); lines > 320 {
		t.Errorf("ARCHITECTURE.md is %d lines: keep it a one-sitting read (about 300)", lines)
	}
}

func TestGoNamesAndDecls(t *testing.T) {
	doc := "Calls `(*bridge.Hub).Send`, `(*Hub).Pick`, `(relayhttp.Relay).Handle`, `relayhttp.Request` and `guard.New`.\n" +
		"Not names: `go.mod`, `peers.json`, `make test`, `supervisor/guard`, `POST /v1/exec`.\n" +
		"```\n`bridge.InFence`\n```\n`bridge.Gone` `(*bridge.Hub).Gone` `(*Nope).Send`\n"
	pkgs := map[string]bool{"bridge": true, "relayhttp": true, "guard": true}
	var got []string
	for _, n := range GoNames(doc, pkgs) {
		got = append(got, n.Text)
	}
	want := "(*bridge.Hub).Send (*Hub).Pick (relayhttp.Relay).Handle relayhttp.Request guard.New bridge.Gone (*bridge.Hub).Gone (*Nope).Send"
	if strings.Join(got, " ") != want {
		t.Fatalf("GoNames = %q\nwant      %q", strings.Join(got, " "), want)
	}
	d := Decls{Top: map[string]bool{"relayhttp.Request": true, "guard.New": true},
		Methods:  map[string]bool{"bridge.Hub.Send": true, "bridge.Hub.Pick": true, "relayhttp.Relay.Handle": true},
		Packages: pkgs}
	for i, n := range GoNames(doc, pkgs) {
		if want := i < 5; d.Has(n) != want {
			t.Errorf("Has(%s) = %v, want %v", n.Text, !want, want)
		}
	}
}

var goNameShape = regexp.MustCompile(`^(\(\*?([a-z][a-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*\)|[a-z][a-z0-9_]*)\.[A-Za-z_][A-Za-z0-9_]*$`)

func FuzzGoNames(f *testing.F) {
	f.Add("`(*bridge.Hub).Send` and `relayhttp.Request`\n```\n`x.Y`\n```\n")
	f.Add("`unclosed and `go.mod` ``")
	pkgs := map[string]bool{"bridge": true, "relayhttp": true}
	f.Fuzz(func(t *testing.T, doc string) {
		for _, n := range GoNames(doc, pkgs) {
			if !goNameShape.MatchString(n.Text) || n.Member == "" || !strings.Contains(doc, "`"+n.Text+"`") {
				t.Fatalf("took %+v from %q", n, doc)
			}
			if n.Type == "" && !pkgs[n.Pkg] {
				t.Fatalf("took %q of an unknown package", n.Text)
			}
		}
	})
}
