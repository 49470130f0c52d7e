package main

import (
	"slices"
	"strings"
	"testing"
)

// The checker passes a release whose links all resolve (code spans, fenced
// blocks, URLs and anchors are not file links) and fails one with a dangling
// link or a link that leaves the release: what make dist-check relies on.
func TestDanglingLinks(t *testing.T) {
	bad, err := danglingLinks("testdata/links/good")
	if err != nil || len(bad) != 0 {
		t.Fatalf("good release: %v %v", bad, err)
	}
	bad, err = danglingLinks("testdata/links/dangling")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"docs/deploy.md: ../../secrets.md (leaves the release)", "docs/deploy.md: snapshots.md"}
	if !slices.Equal(bad, want) {
		t.Fatalf("dangling = %q, want %q", bad, want)
	}
	if err := runLinks([]string{"testdata/links/dangling"}); err == nil || !strings.Contains(err.Error(), "2 relative links") {
		t.Fatalf("runLinks = %v, want a failure naming 2 links", err)
	}
}

func FuzzMarkdownLinks(f *testing.F) {
	f.Add("[a](b.md) [c](<d e.md> \"t\")\n[r]: x.md\n```\n[n](o)\n```")
	f.Add("`[x](y)` [](#a) [u](https://h/p)")
	f.Fuzz(func(t *testing.T, text string) {
		for _, l := range markdownLinks(text) {
			if !strings.Contains(text, l) {
				t.Fatalf("link %q is not in the text", l)
			}
			isLocal(l)
		}
	})
}
