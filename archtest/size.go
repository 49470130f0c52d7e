package archtest

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"sort"
	"strings"
)

// The sizes past which a file or a function needs a reason to stay.
const (
	MaxFileLines = 500
	MaxFuncLines = 100
)

// A Long is a file or a function over its limit. Func is "" for a file,
// "Name" for a function, "Type.Method" for a method.
type Long struct {
	File  string // relative to the module root, slash-separated
	Func  string
	Lines int
}

// Key is how the allow-list names it: path or path:Func.
func (l Long) Key() string {
	if l.Func == "" {
		return l.File
	}
	return l.File + ":" + l.Func
}

// LongParts lists the non-test, non-generated files of the module's
// packages over MaxFileLines and the functions over MaxFuncLines.
func LongParts(root string) ([]Long, error) {
	pkgs, err := ListPackages(root)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []Long
	for _, p := range pkgs {
		for _, name := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			if ast.IsGenerated(f) {
				continue
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if n := fset.File(f.Pos()).LineCount(); n > MaxFileLines {
				out = append(out, Long{File: rel, Lines: n})
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n > MaxFuncLines {
					out = append(out, Long{File: rel, Func: FuncName(fd), Lines: n})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// FuncName is "Name" for a function and "Type.Method" for a method
// (pointer or not, type parameters dropped).
func FuncName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// An Allowance is one line of the allow-list: a file or function that may
// stay over its limit, and why.
type Allowance struct {
	Key    string // path or path:Func
	Reason string
	Line   int
}

// AllowSeparator divides an allow-list line's key from its reason.
const AllowSeparator = " — "

// ParseAllowList reads lines of "path[:Func] — reason". Blank lines and
// lines starting with # are skipped; a line without a reason, with a key
// holding spaces, or naming a key twice is an error naming its line.
func ParseAllowList(r io.Reader) ([]Allowance, error) {
	var out []Allowance
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, reason, ok := strings.Cut(line, AllowSeparator)
		key, reason = strings.TrimSpace(key), strings.TrimSpace(reason)
		switch {
		case !ok || reason == "":
			return nil, fmt.Errorf("line %d: want %q, got %q", n, "path[:Func]"+AllowSeparator+"reason", line)
		case key == "" || strings.ContainsAny(key, " \t"):
			return nil, fmt.Errorf("line %d: %q is not a path[:Func]", n, key)
		case seen[key] != 0:
			return nil, fmt.Errorf("line %d: %s is already listed on line %d", n, key, seen[key])
		}
		seen[key] = n
		out = append(out, Allowance{Key: key, Reason: reason, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckSizes returns what is over its limit without an allowance, and the
// allowances that no longer match anything over its limit (stale: drop them).
func CheckSizes(long []Long, allow []Allowance) (unexplained []Long, stale []Allowance) {
	allowed := map[string]bool{}
	for _, a := range allow {
		allowed[a.Key] = true
	}
	present := map[string]bool{}
	for _, l := range long {
		present[l.Key()] = true
		if !allowed[l.Key()] {
			unexplained = append(unexplained, l)
		}
	}
	for _, a := range allow {
		if !present[a.Key] {
			stale = append(stale, a)
		}
	}
	return unexplained, stale
}
