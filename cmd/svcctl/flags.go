package main

import (
	"errors"
	"flag"
	"fmt"
)

// flags makes a subcommand's flag set: -h prints help (a usage line, what
// it does, examples, then "flags:") and the flag defaults; every
// subcommand also takes -format, defaulting to the global one.
func (c *client) flags(name, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.errOut)
	fs.StringVar(&c.format, "format", c.format, "output: human or json (the raw envelope); default the global -format")
	fs.Usage = func() {
		fmt.Fprintln(c.errOut, help)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a subcommand's flags: -h is a success (exit 0), a bad
// flag exit 2 (the flag package has said why and printed the help).
func (c *client) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitError(0)
		}
		return exitError(2)
	}
	if c.format != formatHuman && c.format != formatJSON {
		return usageError(fmt.Sprintf("-format %q: want human or json", c.format))
	}
	return nil
}
