package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// helpFlags is a subcommand's flag set with the help it prints for -h.
type helpFlags struct {
	*flag.FlagSet
	help string
}

// flags makes a subcommand's flag set: -h prints help (a usage line, what
// it does, examples, then "flags:") and the flag defaults on stdout; every
// subcommand also takes -format, defaulting to the global one.
func (c *client) flags(name, help string) *helpFlags {
	fs := newFlags(name)
	fs.StringVar(&c.format, "format", c.format, "output: human or json (the raw envelope); default the global -format")
	return &helpFlags{FlagSet: fs, help: help}
}

// parse parses a subcommand's flags: -h is a success (exit 0, help on
// stdout), a bad flag exit 2 with the nearest flag named on stderr (not the
// whole help: the flag package would print it for a mistake too).
func (c *client) parse(fs *helpFlags, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(c.out, fs.help)
			fs.SetOutput(c.out)
			fs.PrintDefaults()
			return exitError(0)
		}
		fmt.Fprintf(c.errOut, "svcctl %s: %srun 'svcctl %s -h' for help\n", fs.Name(), flagHint(fs.FlagSet, err), fs.Name())
		return exitError(2)
	}
	if c.format != formatHuman && c.format != formatJSON {
		return usageError(fmt.Sprintf("-format %q: want human or json", c.format))
	}
	return nil
}

// newFlags is a flag set for a subcommand that parses with its own usage
// line: silent, since the caller reports the mistake (flagHint).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// noArgs is the mistake of giving arguments to a command that takes none;
// a word that looks like a mistyped global flag is named.
func noArgs(command string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := ""
	if strings.HasPrefix(args[0], "-") {
		name, _, _ := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		hint = didYouMean(name, globalFlagNames(), "-")
	}
	return usageError(fmt.Sprintf("%s takes no arguments; got %q%s", command, args[0], hint))
}
