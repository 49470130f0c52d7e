package main

import (
	"flag"
	"strings"
)

// globalFlagNames are svcctl's own flags (run). They may stand before the
// command or after it: `svcctl status -format=json` is `svcctl -format=json
// status`, as people type it.
func globalFlagNames() []string { return []string{"addr", "token", "data-dir", "config", "format"} }

// hoistGlobals splits the arguments after the command name into the global
// flags among them (with their values) and the command's own arguments.
// It stops at "--" (what follows belongs to a remote command) and, for
// exec, at the first word that is not a flag: `svcctl exec ls -format x`
// runs `ls -format x`.
func hoistGlobals(global *flag.FlagSet, command string, args []string) (globals, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || (command == "exec" && !strings.HasPrefix(a, "-")) {
			return globals, append(rest, args[i:]...)
		}
		// "-name" or "--name", with "=value" or the next word as its value,
		// as the flag package reads them.
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(name, "-") || global.Lookup(name) == nil {
			rest = append(rest, a)
			continue
		}
		globals = append(globals, a)
		if !hasValue && i+1 < len(args) && args[i+1] != "--" {
			globals = append(globals, args[i+1])
			i++
		}
	}
	return globals, rest
}
