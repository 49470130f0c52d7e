package agentd

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
)

// TestPluginHalves runs the gRPC client and server halves over a real
// go-plugin gRPC connection: "starting" before the daemon exists, then the
// child's state.
func TestPluginHalves(t *testing.T) {
	srv := &GRPCServer{}
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{Name: &Plugin{Impl: srv}})
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(Name)
	if err != nil {
		t.Fatal(err)
	}
	h := raw.(Health)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st, err := h.ChildState(ctx); err != nil || st != "starting" {
		t.Fatalf("before the daemon: %q %v", st, err)
	}
	d, err := New(Config{DataDir: t.TempDir(), Command: []string{"/nonexistent/codex"}, RestartMin: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	srv.d.Store(d)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := h.ChildState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A command that is not installed is "missing" (with how to
		// install it), not a crash loop.
		if st == "missing" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %q, want missing", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
