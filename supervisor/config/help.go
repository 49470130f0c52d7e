package config

import (
	"flag"
	"fmt"
	"slices"
)

// helpFlagsOf is the flags a command's -h lists, nil for all of them. Every
// command reads the same configuration (flags, file, environment), but a
// witness has no listener, workers or exec: `svcd witness -h` lists only
// what a witness uses, so an operator is not sent after serve's flags.
func helpFlagsOf(name string) []string {
	if name == "svcd witness" {
		return []string{"config", "data-dir", "node-id", "raft-addr", "raft-advertise", "join", "witness-listen", "allow-downgrade",
			"log-level", "log-json", "log-file", "log-rotate-bytes", "log-rotate-max-files"}
	}
	return nil
}

// printSomeDefaults is flag's usage message for the named flags only.
func printSomeDefaults(fs *flag.FlagSet, names []string) {
	out := fs.Output()
	fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
	only := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	only.SetOutput(out)
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(names, f.Name) {
			only.Var(f.Value, f.Name, f.Usage)
		}
	})
	only.PrintDefaults()
	fmt.Fprintln(out, "\nThe shared token comes from SVC_SHARED_TOKEN or the config file (shared_token); the other settings of the config file apply as to serve.")
}
