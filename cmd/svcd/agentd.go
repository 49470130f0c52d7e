package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/svcd/svcd/workers/agentd"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

// runAgentd is `svcd agentd`: the agent daemon on its own, outside the
// supervisor (which normally spawns it as the agentd worker).
func runAgentd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agentd", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4319", "HTTP listen address (loopback)")
	dataDir := fs.String("data-dir", "data/agentd", "directory of the session store")
	command := fs.String("codex", "codex app-server", "the agent child command, split on spaces")
	codexHome := fs.String("codex-home", "", "CODEX_HOME for the child (its config.toml picks the model provider)")
	policy := fs.String("approval-policy", "decline", "answer to command/file-change approval requests: decline or accept")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *policy != "decline" && *policy != "accept" {
		return fmt.Errorf("-approval-policy must be decline or accept")
	}
	token := os.Getenv("SVC_SHARED_TOKEN")
	if token == "" {
		return fmt.Errorf("SVC_SHARED_TOKEN must be set: agentd's writes need it")
	}
	d, err := agentd.New(agentd.Config{Listen: *listen, DataDir: *dataDir, Command: strings.Fields(*command),
		CodexHome: *codexHome, ApprovalPolicy: *policy, Token: token}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	fmt.Fprintf(os.Stderr, "agentd listening on http://%s\n", *listen)
	return d.Serve(ctx)
}

// runFakeModel is the hidden `svcd fake-model`: a loopback model server that
// speaks the streaming Responses subset Codex uses and answers from a script.
// It exists for tests and for trying agentd offline; it is not a model.
func runFakeModel(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fake-model", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address (loopback)")
	script := fs.String("script", "", "JSON file: an array of replies {text, chunks, chunk_delay_ms, error_status, error_message}")
	def := fs.String("default", "ok from the fake model", "reply once the script is used up")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s := fakemodel.New()
	s.Default = fakemodel.Reply{Text: *def}
	if *script != "" {
		b, err := os.ReadFile(*script)
		if err != nil {
			return err
		}
		var replies []fakemodel.Reply
		if err := json.Unmarshal(b, &replies); err != nil {
			return fmt.Errorf("%s: %w", *script, err)
		}
		s.Push(replies...)
	}
	if err := s.Start(*listen); err != nil {
		return err
	}
	defer s.Close()
	// The base URL on stdout, alone, so scripts and tests can read it.
	fmt.Println(s.BaseURL())
	<-ctx.Done()
	return nil
}
