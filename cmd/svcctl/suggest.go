package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/svcd/svcd/shared/didyoumean"
)

// didYouMean is " (did you mean X?)" for a near candidate, else "".
func didYouMean(word string, candidates []string, prefix string) string {
	sorted := slices.Sorted(slices.Values(candidates)) // the same answer for the same typo
	if c, ok := didyoumean.Nearest(word, sorted); ok {
		return fmt.Sprintf(" (did you mean %s%s?)", prefix, c)
	}
	return ""
}

// undefinedFlagPrefix is how the flag package reports an unknown flag.
const undefinedFlagPrefix = "flag provided but not defined: -"

// flagHint explains a flag set's parse error, naming the nearest flag of fs
// or of svcctl's global flags for an unknown one, and ends in "; " so a
// usage line can follow. nil gives "" (the usage line alone).
func flagHint(fs *flag.FlagSet, err error) string {
	if err == nil || err == flag.ErrHelp {
		return ""
	}
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, undefinedFlagPrefix)
	if !ok {
		return msg + "; "
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	names = append(names, globalFlagNames()...)
	return fmt.Sprintf("unknown flag -%s%s; ", name, didYouMean(name, names, "-"))
}
