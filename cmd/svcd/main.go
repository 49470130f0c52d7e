// Command svcd is the local control and browser-relay daemon. One binary:
// serve (the supervisor), status-wrapper, and the hidden worker entry that
// go-plugin re-executes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/svcd/svcd/shared/didyoumean"
)

// subcommand runs one svcd mode with its own arguments.
type subcommand struct {
	summary string
	hidden  bool
	run     func(ctx context.Context, args []string) error
}

func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"serve":          {summary: "run the daemon (supervisor) on 127.0.0.1:4317", run: runServe},
		"status-wrapper": {summary: "run the read-only status wrapper on 127.0.0.1:4318", run: runStatusWrapper},
		"witness":        {summary: "run a raft voter with no listener or workers (two-node HA)", run: runWitness},
		"recover":        {summary: "write peers.json for the manual promotion of a lone survivor", run: runRecover},
		"version":        {summary: "print the version", run: runVersion},
		"snapshot":       {summary: "save or restore a raft state snapshot file offline (docs/snapshots.md)", run: runSnapshot},
		"agentd":         {summary: "run the agent daemon on its own on 127.0.0.1:4319", run: runAgentd},
		"tls":            {summary: "create the cluster CA and node certificates (tls ca create, tls cert create)", run: runTLS},
		"fake-model":     {summary: "fake Responses model server for tests and offline trials", hidden: true, run: runFakeModel},
		"worker":         {summary: "run a worker process (started by serve through go-plugin)", hidden: true, run: runWorker},
	}
}

// listedCommands are the commands people see, in the order usage lists them.
func listedCommands() []string {
	return []string{"serve", "status-wrapper", "witness", "recover", "snapshot", "agentd", "tls", "version"}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: svcd <command> [flags]\n\ncommands:")
	for _, name := range listedCommands() {
		fmt.Fprintf(w, "  %-15s %s\n", name, subcommands()[name].summary)
	}
	fmt.Fprintln(w, "\nsvcd <command> -h (or svcd help <command>) lists the command's flags.")
}

// isHelp reports the ways people ask for help before naming a command.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	if isHelp(os.Args[1]) {
		// `svcd help serve` is `svcd serve -h`; plain help is the overview,
		// on stdout and with status 0 since it was asked for.
		if len(os.Args) > 2 {
			// An unknown name falls through to "unknown command".
			os.Args = []string{os.Args[0], os.Args[2], "-h"}
		}
		if len(os.Args) == 2 || isHelp(os.Args[1]) {
			usage(os.Stdout)
			os.Exit(0)
		}
	}
	cmd, ok := subcommands()[os.Args[1]]
	if !ok {
		hint := ""
		if near, ok := didyoumean.Nearest(os.Args[1], listedCommands()); ok {
			hint = fmt.Sprintf(" (did you mean %s?)", near)
		}
		fmt.Fprintf(os.Stderr, "svcd: unknown command %q%s\n\n", os.Args[1], hint)
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := handleSignals(context.Background())
	defer stop()
	if err := cmd.run(ctx, os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "svcd %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
