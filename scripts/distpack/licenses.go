package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// module is one Go module linked into the binaries.
type module struct {
	Path, Version, Dir string
}

// linkedModules lists the modules the packages depend on, for linux (the
// release target), with their directories in the module cache.
func linkedModules(pkgs []string) ([]module, error) {
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=Module"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	seen := map[string]module{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			Module *struct {
				Path, Version, Dir string
				Main               bool
				Replace            *struct{ Path, Version, Dir string }
			}
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		if p.Module == nil || p.Module.Main {
			continue // the standard library (noted apart) and svcd itself
		}
		m := module{Path: p.Module.Path, Version: p.Module.Version, Dir: p.Module.Dir}
		if r := p.Module.Replace; r != nil {
			m.Version, m.Dir = r.Version, r.Dir
		}
		seen[m.Path] = m
	}
	mods := make([]module, 0, len(seen))
	for _, m := range seen {
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

var licenceFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|patents)([._-].*)?$`)

// kind names a licence text by its wording: an aid for the reader, who has
// the full text beside it.
func kind(text string) string {
	switch {
	case strings.Contains(text, "Mozilla Public License") && strings.Contains(text, "2.0"):
		return "MPL-2.0"
	case strings.Contains(text, "Apache License") && strings.Contains(text, "Version 2.0"):
		return "Apache-2.0"
	case strings.Contains(text, "Permission is hereby granted, free of charge"):
		return "MIT"
	case strings.Contains(text, "Permission to use, copy, modify, and/or distribute") || strings.Contains(text, "ISC License"):
		return "ISC"
	case strings.Contains(text, "Redistribution and use in source and binary forms") && strings.Contains(text, "Neither the name"):
		return "BSD-3-Clause"
	case strings.Contains(text, "Redistribution and use in source and binary forms"):
		return "BSD-2-Clause"
	case strings.Contains(text, "Additional IP Rights Grant (Patents)"):
		return "patent grant"
	}
	return "see text"
}

// runLicenses copies each linked module's licence files (and Go's own, for
// the standard library and runtime in every binary) to DIR/<module>/ and
// writes DIR/README.md, a table of module, version and licence.
func runLicenses(args []string) error {
	fl := flag.NewFlagSet("licenses", flag.ContinueOnError)
	out := fl.String("o", "", "output directory")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *out == "" || fl.NArg() == 0 {
		return errors.New("licenses -o DIR PACKAGE...")
	}
	mods, err := linkedModules(fl.Args())
	if err != nil {
		return err
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return err
	}
	gover, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return err
	}
	all := append([]module{{Path: "go (standard library and runtime)", Version: strings.TrimSpace(string(gover)), Dir: strings.TrimSpace(string(goroot))}}, mods...)
	var table strings.Builder
	table.WriteString("# Third-party licences\n\n" +
		"The svcd and svcctl binaries of this release are statically linked with the Go\n" +
		"modules below, used unmodified at the versions listed; each one's licence\n" +
		"texts are in the folder of its path. The MPL-2.0 modules' source is at that\n" +
		"path and version (`go mod download MODULE@VERSION`). The licence column is\n" +
		"read from the texts' wording as an aid; the texts themselves govern.\n\n" +
		"| module | version | licence | files |\n|---|---|---|---|\n")
	for _, m := range all {
		if m.Dir == "" {
			return fmt.Errorf("module %s %s is not in the module cache (go mod download)", m.Path, m.Version)
		}
		entries, err := os.ReadDir(m.Dir)
		if err != nil {
			return err
		}
		folder := m.Path
		if strings.HasPrefix(folder, "go ") {
			folder = "go"
		}
		var files, kinds []string
		for _, e := range entries {
			if e.IsDir() || !licenceFile.MatchString(e.Name()) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(m.Dir, e.Name()))
			if err != nil {
				return err
			}
			dst := filepath.Join(*out, filepath.FromSlash(folder), e.Name())
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				return err
			}
			files = append(files, folder+"/"+e.Name())
			if k := kind(string(b)); k != "see text" || len(kinds) == 0 {
				kinds = append(kinds, k)
			}
		}
		if len(files) == 0 {
			return fmt.Errorf("module %s %s has no licence file in %s: check it by hand before releasing", m.Path, m.Version, m.Dir)
		}
		fmt.Fprintf(&table, "| %s | %s | %s | %s |\n", m.Path, m.Version, strings.Join(dedupe(kinds), ", "), strings.Join(files, ", "))
	}
	return os.WriteFile(filepath.Join(*out, "README.md"), []byte(table.String()), 0o644)
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if (i == 0 || v != s[i-1]) && !(v == "see text" && len(s) > 1) {
			out = append(out, v)
		}
	}
	return out
}
