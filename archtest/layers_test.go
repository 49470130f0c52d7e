package archtest

import (
	"strings"
	"testing"
)

// TestLayers fails on any import of the module that breaks the layers,
// naming the file, the import and the rule.
func TestLayers(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	imps, err := ModuleImports(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(imps) < 100 {
		t.Fatalf("read only %d imports from %s: the listing is broken, not the layers", len(imps), root)
	}
	for _, v := range Check(imps) {
		t.Error(v)
	}
}

// TestLayersRefuseTheBackArrow feeds the checker the imports the layers
// exist to refuse, and some they allow.
func TestLayersRefuseTheBackArrow(t *testing.T) {
	imp := func(pkg, kind, to string) Import {
		return Import{Pkg: pkg, File: pkg + "/x.go", Kind: kind, Path: Module + "/" + to}
	}
	refused := []struct {
		imp  Import
		rule string
	}{
		{imp("workers/agentd", "", "supervisor/guard"), "layer workers must not import layer supervisor"},
		{imp("workers/relay", "", "raftstore"), "layer workers must not import layer raftstore"},
		{imp("workers/relay", "", "workers/hostops/sandbox"), "layer workers: workers/relay must not import workers/hostops"},
		{imp("shared/api", "", "raftstore"), "layer shared must not import layer raftstore"},
		{imp("shared/api", "", "workers/pluginkit"), "layer shared must not import layer pluginkit"},
		{imp("raftstore", "", "supervisor/config"), "layer raftstore must not import layer supervisor"},
		{imp("raftstore", "", "workers/relay"), "layer raftstore must not import layer workers"},
		{imp("supervisor", "", "cmd/svcd"), "layer supervisor must not import layer cmd"},
		{imp("supervisor", "", "e2e/harness"), "layer supervisor must not import layer tooling"},
		{imp("cmd/svcctl", "", "cmd/svcd"), "layer cmd: cmd/svcctl must not import cmd/svcd"},
		{imp("workers/relay", "xtest", "supervisor/bridge"), "layer workers must not import layer supervisor"},
		{imp("workers/scheduler", "xtest", "supervisor/renewal"), "layer workers must not import layer supervisor"},
		{imp("newtop", "", "shared/api"), "package newtop is in no layer"},
		{imp("supervisor/tasks", "", "raftstore/raftstoretest"), "raftstore/raftstoretest is test support"},
		{imp("raftstore", "", "shared/jsoncache/jsoncachetest"), "shared/jsoncache/jsoncachetest is test support"},
	}
	for _, c := range refused {
		got := Check([]Import{c.imp})
		if len(got) != 1 || !strings.Contains(got[0].String(), c.rule) || !strings.Contains(got[0].String(), c.imp.Path) {
			t.Errorf("%s → %s: got %v, want one violation naming %q", c.imp.Pkg, c.imp.Path, got, c.rule)
		}
	}
	allowed := []Import{
		imp("cmd/svcd", "", "workers/agentd"),
		imp("supervisor", "", "workers/relay"),
		imp("supervisor/bridge", "", "supervisor/pagecursor"),
		imp("workers/agentd", "", "shared/guard"),
		imp("workers/agentd", "", "workers/agentd/codexrpc"),
		imp("workers/hostops", "", "workers/pluginkit"),
		imp("raftstore", "", "shared/keyrange"),
		imp("shared/instrloop", "", "shared/instr"),
		imp("e2e", "xtest", "supervisor/bridge"),
		imp("supervisor", "test", "e2e/benchfig"),
		imp("raftstore", "test", "shared/jsoncache/jsoncachetest"),
		imp("raftstore/raftstoretest", "", "raftstore"),
		imp("e2e/harness", "", "supervisor"),
		imp("supervisor/renewal", "xtest", "workers/scheduler"),
		{Pkg: "workers/agentd", File: "workers/agentd/x.go", Path: "github.com/hashicorp/raft"},
	}
	for _, a := range allowed {
		if got := Check([]Import{a}); len(got) != 0 {
			t.Errorf("%s → %s refused: %v", a.Pkg, a.Path, got)
		}
	}
}
