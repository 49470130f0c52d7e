package archtest

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the import path every rule below is relative to.
const Module = "github.com/svcd/svcd"

// A Layer is a set of folders of the module (path prefixes relative to
// Module) and the other layers its code may import. A package belongs to
// the layer with the longest matching prefix.
type Layer struct {
	Name     string
	Prefixes []string
	// MayImport names the layers this one may import besides itself.
	MayImport []string
	// Isolated says the layer's units (the first two path elements, e.g.
	// workers/relay) must not import each other: each is its own process.
	Isolated bool
	// Why is the rule in words; a failure quotes it.
	Why string
}

// Layers is the architecture as data, top to bottom. ARCHITECTURE.md's code
// map says the same in prose.
var Layers = []Layer{
	{
		Name:      "tooling",
		Prefixes:  []string{"e2e", "scripts", "deploy", "archtest"},
		MayImport: []string{"cmd", "supervisor", "pluginkit", "workers", "raftstore", "shared"},
		Why:       "end-to-end tests, scripts and deploy checks sit on top: they may import anything, and shipped code imports none of them",
	},
	{
		Name:      "cmd",
		Prefixes:  []string{"cmd"},
		MayImport: []string{"supervisor", "pluginkit", "workers", "raftstore", "shared"},
		Isolated:  true,
		Why:       "cmd/ holds the mains: flags → config → run; one main never imports another",
	},
	{
		Name:      "supervisor",
		Prefixes:  []string{"supervisor"},
		MayImport: []string{"pluginkit", "workers", "raftstore", "shared"},
		Why:       "the supervisor drives workers and the raft store; nothing below it imports it (cmd → supervisor → workers)",
	},
	{
		Name:      "pluginkit",
		Prefixes:  []string{"workers/pluginkit"},
		MayImport: []string{"shared"},
		Why:       "workers/pluginkit is the go-plugin kit every worker shares; it imports only shared/",
	},
	{
		Name:      "workers",
		Prefixes:  []string{"workers"},
		MayImport: []string{"pluginkit", "shared"},
		Isolated:  true,
		Why:       "a worker is its own process: it never imports supervisor/ or raftstore/ (it reaches state through host services over go-plugin), nor another worker",
	},
	{
		Name:      "raftstore",
		Prefixes:  []string{"raftstore"},
		MayImport: []string{"shared"},
		Why:       "raftstore/ is the raft node and FSM; it imports only shared/",
	},
	{
		Name: "shared",
		// No MayImport: shared/ is the bottom.
		Prefixes: []string{"shared"},
		Why:      "shared/ holds what more than one process uses; it imports no other layer of this module",
	},
}

// TestSupport are packages any test file may import whatever its layer:
// harnesses and fakes that exist for tests. A name ending in "test"
// (raftstoretest, jsoncachetest, codextest) is test support too.
var TestSupport = []string{"e2e/harness", "e2e/benchfig", "e2e/fakeplugin"}

// An Exception lets one test import through that the layers would refuse,
// with the reason beside it. Production code has no exceptions.
type Exception struct {
	From string // package path relative to Module, "[xtest]" for its package foo_test
	To   string // imported package path relative to Module
	Why  string
}

// Exceptions are the test imports that stay, each with its reason.
var Exceptions = []Exception{
	// None: the scheduler worker's wiring test lives beside the renewal
	// driver it drives (supervisor/renewal/worker_wiring_test.go), where
	// the supervisor layer may import the worker.
}

// An Import is one import line of one file.
type Import struct {
	Pkg  string // importing package, relative to Module
	File string // file path relative to the module root
	Kind string // "", "test" (package foo's _test.go) or "xtest" (package foo_test)
	Path string // full import path as written
}

// A Violation is an import that breaks a rule.
type Violation struct {
	Import Import
	Rule   string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s imports %q: %s", v.Import.File, v.Import.Path, v.Rule)
}

// layerOf is the layer of pkg (relative path) and its unit, or nil when no
// layer claims it (a new top-level folder: a failure of its own).
func layerOf(pkg string) (*Layer, string) {
	var best *Layer
	bestLen := -1
	for i := range Layers {
		for _, p := range Layers[i].Prefixes {
			if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > bestLen {
				best, bestLen = &Layers[i], len(p)
			}
		}
	}
	parts := strings.SplitN(pkg, "/", 3)
	unit := parts[0]
	if len(parts) > 1 {
		unit = parts[0] + "/" + parts[1]
	}
	return best, unit
}

func isTestSupport(pkg string) bool {
	for _, s := range TestSupport {
		if pkg == s {
			return true
		}
	}
	return strings.HasSuffix(pkg, "test")
}

func excepted(imp Import, to string) bool {
	from := imp.Pkg
	if imp.Kind == "xtest" {
		from += " [xtest]"
	}
	for _, e := range Exceptions {
		if e.From == from && e.To == to {
			return true
		}
	}
	return false
}

// Check returns every import in imps that breaks the layers, sorted by file.
// Imports from outside the module are not its business.
func Check(imps []Import) []Violation {
	var out []Violation
	for _, imp := range imps {
		if imp.Path != Module && !strings.HasPrefix(imp.Path, Module+"/") {
			continue
		}
		to := strings.TrimPrefix(strings.TrimPrefix(imp.Path, Module), "/")
		if rule := broken(imp, to); rule != "" {
			out = append(out, Violation{Import: imp, Rule: rule})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Import.File != out[j].Import.File {
			return out[i].Import.File < out[j].Import.File
		}
		return out[i].Import.Path < out[j].Import.Path
	})
	return out
}

// broken names the rule imp breaks, or "" when it keeps them all.
func broken(imp Import, to string) string {
	from, fromUnit := layerOf(imp.Pkg)
	if from == nil {
		return fmt.Sprintf("package %s is in no layer: add its folder to archtest.Layers (and ARCHITECTURE.md's code map)", imp.Pkg)
	}
	dst, toUnit := layerOf(to)
	if dst == nil {
		return fmt.Sprintf("package %s is in no layer: add its folder to archtest.Layers (and ARCHITECTURE.md's code map)", to)
	}
	if imp.Kind != "" && (isTestSupport(to) || excepted(imp, to)) {
		return ""
	}
	if rule := layerRule(from, dst, fromUnit, toUnit); rule != "" {
		return rule
	}
	if imp.Kind == "" && isTestSupport(to) && !isTestSupport(imp.Pkg) && from.Name != "tooling" {
		return fmt.Sprintf("%s is test support: only tests, tooling and other test support import it", to)
	}
	return ""
}

// layerRule names the layer rule an import from one unit to another breaks, or "".
func layerRule(from, dst *Layer, fromUnit, toUnit string) string {
	if dst == from {
		if from.Isolated && fromUnit != toUnit {
			return fmt.Sprintf("layer %s: %s must not import %s — %s", from.Name, fromUnit, toUnit, from.Why)
		}
		return ""
	}
	for _, m := range from.MayImport {
		if m == dst.Name {
			return ""
		}
	}
	return fmt.Sprintf("layer %s must not import layer %s — %s", from.Name, dst.Name, from.Why)
}
