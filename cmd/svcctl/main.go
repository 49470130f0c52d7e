// Command svcctl is the operator CLI for a running svcd. It talks HTTP to
// -addr (default the local daemon) and prints the answers for people, or the
// raw JSON envelopes under -format=json.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// command is one svcctl subcommand. run gets the arguments after its name.
type command struct {
	usage string
	run   func(ctx context.Context, c *client, args []string) error
}

// commands is the table of subcommands; each area keeps its commands in its
// own file and adds them here.
func commands() map[string]command {
	return map[string]command{
		"status":      {usage: "status                       narrow status snapshot", run: runStatus},
		"system":      {usage: "system state|pause|resume|drain [--reason R] [--by WHO]", run: runSystem},
		"exec":        {usage: "exec [-cwd DIR] [-timeout-ms N] -- CMD ARGS... | exec -sh 'SHELL'   run on the daemon's host; its output and exit code are svcctl's", run: runExec},
		"files":       {usage: "files read|write [flags] PATH [CONTENT]   read or write a file on the daemon's host", run: runFiles},
		"workers":     {usage: "workers [restart NAME|all]   list worker processes, or rolling-restart one", run: runWorkers},
		"cluster":     {usage: "cluster [ls] | cluster join ID RAFT API|- | cluster remove ID   members and roles; add or remove a node (token)", run: runCluster},
		"browser":     {usage: browserUsage, run: runBrowser},
		"instr":       {usage: instrUsage, run: runInstr},
		"agent":       {usage: agentUsage, run: runAgent},
		"renewal":     {usage: renewalUsage, run: runRenewal},
		"tasks":       {usage: tasksUsage, run: runTasks},
		"controllers": {usage: "controllers                  the daemon nodes with the active leader hint", run: runControllers},
		"api":         {usage: "api                          the OpenAPI 3.1 document of the daemon's routes", run: runAPI},
		"snapshot":    {usage: snapshotUsage, run: runSnapshot},
		"version":     {usage: "version                      svcctl's build, then the daemon's (GET /version)", run: runVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("svcctl", flag.ContinueOnError)
	// The flag package's own messages are replaced by ours: help asked for
	// goes to stdout with status 0, a mistake to stderr with a hint.
	fs.SetOutput(io.Discard)
	defAddr := getenv("SVC_ADDR")
	if defAddr == "" {
		defAddr = "http://127.0.0.1:4317"
	}
	addr := fs.String("addr", defAddr, "daemon base URL (env SVC_ADDR)")
	token := fs.String("token", "", "bearer token for host operations (default: SVC_SHARED_TOKEN, the config file's shared_token, then <data dir>/shared_token)")
	dataDir := fs.String("data-dir", "", "the daemon's data dir, where its token file is (default: SVC_DATA_DIR, the config file's data_dir, then ./data)")
	configFile := fs.String("config", "", "the daemon's HCL config file (default: SVC_CONFIG)")
	format := fs.String("format", formatHuman, "output: human (tables, key: value, relative times) or json (the raw envelope, for scripts)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return 0
		}
		fmt.Fprintf(stderr, "svcctl: %srun 'svcctl -h' for the commands and flags\n", flagHint(fs, err))
		return 2
	}
	if fs.NArg() == 0 {
		usage(stderr, fs)
		return 2
	}
	name := fs.Arg(0)
	cmd, ok := commands()[name]
	if !ok {
		fmt.Fprintf(stderr, "svcctl: unknown command %q%s; run 'svcctl -h' for the commands\n", name, didYouMean(name, slices.Collect(maps.Keys(commands())), ""))
		return 2
	}
	// Global flags after the command name count as if given before it.
	globals, cmdArgs := hoistGlobals(fs, name, fs.Args()[1:])
	if err := fs.Parse(globals); err != nil {
		fmt.Fprintf(stderr, "svcctl %s: %srun 'svcctl %s -h' for help\n", name, flagHint(fs, err), name)
		return 2
	}
	if *format != formatHuman && *format != formatJSON {
		fmt.Fprintf(stderr, "svcctl: -format %q: want human or json\n", *format)
		return 2
	}
	if wantsHelp(cmdArgs) && printHelp(stdout, name) {
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := newClient(*addr, *token, getenv, stdout)
	c.dataDir, c.configFile = *dataDir, *configFile
	c.errOut, c.format = stderr, *format
	if err := cmd.run(ctx, c, cmdArgs); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return int(ee)
		}
		fmt.Fprintf(stderr, "svcctl %s: %v\n", name, err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// usageError marks a mistake in the command line (exit 2).
type usageError string

func (u usageError) Error() string { return string(u) }

// exitError is an exit code already explained on stderr (exec passes the
// remote command's on).
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: svcctl [-addr URL] [-format human|json] [-token T | -data-dir DIR | -config FILE] <command> [args]\n\ncommands:")
	var lines []string
	for _, c := range commands() {
		lines = append(lines, "  "+c.usage)
	}
	sort.Strings(lines)
	fmt.Fprintln(w, strings.Join(lines, "\n"))
	fmt.Fprintln(w, "\nflags (before or after the command):")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
