package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
)

// The two spellings of a Go name in ARCHITECTURE.md, inside backticks:
// pkg.Name (a function, type, variable or constant of package pkg), and
// (*pkg.Type).Method or (pkg.Type).Method (pkg may be left out when the
// type's name is enough).
var (
	methodName = regexp.MustCompile(`^\(\*?(?:([a-z][a-z0-9_]*)\.)?([A-Za-z_][A-Za-z0-9_]*)\)\.([A-Za-z_][A-Za-z0-9_]*)$`)
	declName   = regexp.MustCompile(`^([a-z][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$`)
)

// CodeSpans returns the text of each `code span` of markdown outside
// fenced blocks, in order.
func CodeSpans(markdown string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for {
			i := strings.IndexByte(line, '`')
			if i < 0 {
				break
			}
			j := strings.IndexByte(line[i+1:], '`')
			if j < 0 {
				break
			}
			out = append(out, line[i+1:i+1+j])
			line = line[i+1+j+1:]
		}
	}
	return out
}

// A GoName is one name cited in a document.
type GoName struct {
	Text   string // as written
	Pkg    string // package name, "" for a method written without it
	Type   string // receiver type, "" for a declaration
	Member string // the function, method or declaration
}

// GoNames picks the code spans of markdown spelled as Go names. A pkg.Name
// span counts only when pkg is one of pkgs (the module's package names), so
// `go.mod` or `peers.json` are not taken for code.
func GoNames(markdown string, pkgs map[string]bool) []GoName {
	var out []GoName
	for _, s := range CodeSpans(markdown) {
		if m := methodName.FindStringSubmatch(s); m != nil {
			out = append(out, GoName{Text: s, Pkg: m[1], Type: m[2], Member: m[3]})
		} else if m := declName.FindStringSubmatch(s); m != nil && pkgs[m[1]] {
			out = append(out, GoName{Text: s, Pkg: m[1], Member: m[2]})
		}
	}
	return out
}

// Decls is what the module's non-test files declare, by package name (two
// packages of one name, like the mains, share an entry).
type Decls struct {
	// Top holds "pkg.Name" for each top-level declaration.
	Top map[string]bool
	// Methods holds "pkg.Type.Method" for each method.
	Methods map[string]bool
	// Packages holds every package name.
	Packages map[string]bool
}

// ModuleDecls reads the declarations of the module's non-test files.
func ModuleDecls(root string) (Decls, error) {
	d := Decls{Top: map[string]bool{}, Methods: map[string]bool{}, Packages: map[string]bool{}}
	pkgs, err := ListPackages(root)
	if err != nil {
		return d, err
	}
	fset := token.NewFileSet()
	for _, p := range pkgs {
		for _, name := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return d, err
			}
			d.add(f)
		}
	}
	return d, nil
}

func (d Decls) add(f *ast.File) {
	pkg := f.Name.Name
	d.Packages[pkg] = true
	for _, decl := range f.Decls {
		switch x := decl.(type) {
		case *ast.FuncDecl:
			if name := FuncName(x); strings.Contains(name, ".") {
				d.Methods[pkg+"."+name] = true
			} else {
				d.Top[pkg+"."+name] = true
			}
		case *ast.GenDecl:
			for _, spec := range x.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					d.Top[pkg+"."+s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						d.Top[pkg+"."+n.Name] = true
					}
				}
			}
		}
	}
}

// Has reports whether n is declared in the module.
func (d Decls) Has(n GoName) bool {
	if n.Type == "" {
		return d.Top[n.Pkg+"."+n.Member]
	}
	if n.Pkg != "" {
		return d.Methods[n.Pkg+"."+n.Type+"."+n.Member]
	}
	suffix := "." + n.Type + "." + n.Member
	for k := range d.Methods {
		if strings.HasSuffix(k, suffix) && strings.Count(k, ".") == 2 {
			return true
		}
	}
	return false
}
