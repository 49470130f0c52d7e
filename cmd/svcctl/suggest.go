package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
)

// closest is the candidate nearest to word, when it is near enough to be a
// typo of it: at most a third of the word's length in edits (two for long
// words), so "stauts" finds "status" but "x" finds nothing.
func closest(word string, candidates []string) (string, bool) {
	limit := len(word) / 3
	if limit < 1 {
		limit = 1
	}
	if limit > 2 {
		limit = 2
	}
	best, bestDist := "", limit+1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted) // the same answer for the same typo
	for _, c := range sorted {
		// A word cut short ("-timeout" for "-timeout-ms") is meant too.
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			return c, true
		}
	}
	for _, c := range sorted {
		if d := levenshtein.Distance(word, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// didYouMean is " (did you mean X?)" for a near candidate, else "".
func didYouMean(word string, candidates []string, prefix string) string {
	if c, ok := closest(word, candidates); ok {
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
