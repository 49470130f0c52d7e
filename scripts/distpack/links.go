package main

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// `distpack links DIR` is make dist-check's test of a release's docs: every
// relative link in every Markdown file under DIR must name a file inside DIR
// (a release whose docs point at pages it does not carry was issue 35's
// finding: docs/deploy.md linked five docs the tarball lacked). External
// links (a scheme such as https:, mailto:) and in-page anchors are left to
// the reader; a link that leaves DIR (../../x) counts as dangling.

// inlineLink is [text](target) or [text](target "title"); refLink is a
// reference definition "[id]: target".
var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
)

// markdownLinks returns the link targets of a Markdown text, skipping fenced
// code blocks and inline code spans (a link written as code is not a link).
func markdownLinks(text string) []string {
	var out []string
	fenced := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fenced != "" {
			if strings.HasPrefix(trimmed, fenced) {
				fenced = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = trimmed[:3]
			continue
		}
		line = stripCodeSpans(line)
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// stripCodeSpans blanks (with spaces, so nothing new is joined) the
// backquotes of one line and what is between them.
func stripCodeSpans(line string) string {
	b := []byte(line)
	in := false
	for i, c := range b {
		if c == '`' {
			in = !in
		}
		if in || c == '`' {
			b[i] = ' '
		}
	}
	return string(b)
}

// isLocal reports whether a target is a relative file link (not a URL with a
// scheme, not only an anchor), and returns its path without the anchor or
// query, unescaped.
func isLocal(target string) (string, bool) {
	if target == "" || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "//") {
		return "", false
	}
	if u, err := url.Parse(target); err == nil && u.Scheme != "" {
		return "", false
	}
	p, _, _ := strings.Cut(target, "#")
	p, _, _ = strings.Cut(p, "?")
	if un, err := url.PathUnescape(p); err == nil {
		p = un
	}
	return p, p != ""
}

// danglingLinks lists "FILE: TARGET" for every relative link under root that
// does not resolve to a file or directory inside root.
func danglingLinks(root string) ([]string, error) {
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(strings.ToLower(p), ".md") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, target := range markdownLinks(string(b)) {
			local, ok := isLocal(target)
			if !ok {
				continue
			}
			var resolved string
			if strings.HasPrefix(local, "/") {
				resolved = path.Clean(strings.TrimPrefix(local, "/"))
			} else {
				resolved = path.Join(path.Dir(filepath.ToSlash(rel)), local)
			}
			if resolved == ".." || strings.HasPrefix(resolved, "../") {
				bad = append(bad, rel+": "+target+" (leaves the release)")
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(resolved))); err != nil {
				bad = append(bad, rel+": "+target)
			}
		}
		return nil
	})
	sort.Strings(bad)
	return bad, err
}

func runLinks(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: distpack links DIR")
	}
	bad, err := danglingLinks(args[0])
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d relative links in the docs of %s do not resolve inside it:\n  %s", len(bad), args[0], strings.Join(bad, "\n  "))
	}
	return nil
}
