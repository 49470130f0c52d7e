package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ModuleRoot is the directory holding go.mod, found upward from dir.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		d = filepath.Dir(d)
	}
}

// listedPackage is the part of `go list -json` this package reads.
type listedPackage struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
}

// ListPackages runs `go list -json ./...` in root: the module's packages
// with the files the build (and go test) would use on this platform.
func ListPackages(root string) ([]listedPackage, error) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// ModuleImports lists every import line of every file of the module's
// packages, read with go/parser so a failure can name the file.
func ModuleImports(root string) ([]Import, error) {
	pkgs, err := ListPackages(root)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []Import
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, Module), "/")
		groups := []struct {
			kind  string
			files []string
		}{{"", p.GoFiles}, {"", p.CgoFiles}, {"test", p.TestGoFiles}, {"xtest", p.XTestGoFiles}}
		for _, g := range groups {
			for _, name := range g.files {
				path := filepath.Join(p.Dir, name)
				f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
				if err != nil {
					return nil, err
				}
				relFile, _ := filepath.Rel(root, path)
				for _, spec := range f.Imports {
					ip, err := strconv.Unquote(spec.Path.Value)
					if err != nil {
						return nil, fmt.Errorf("%s: %v", relFile, err)
					}
					out = append(out, Import{Pkg: rel, File: relFile, Kind: g.kind, Path: ip})
				}
			}
		}
	}
	return out, nil
}
