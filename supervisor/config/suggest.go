package config

import (
	"flag"
	"fmt"
	"strings"
)

// unknownFlagPrefix is how flag.FlagSet reports a flag it does not know.
const unknownFlagPrefix = "flag provided but not defined: -"

// suggestFlag adds the nearest defined flag to flag's "not defined" error,
// so `-lisen` answers "did you mean -listen?". Other errors pass unchanged.
func suggestFlag(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if !strings.HasPrefix(msg, unknownFlagPrefix) {
		return err
	}
	given := strings.TrimPrefix(msg, unknownFlagPrefix)
	best, bestDist := "", -1
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(given, f.Name)
		if bestDist < 0 || d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	// Farther than a third of the name is a guess, not a typo.
	if best == "" || bestDist > max(2, len(given)/3) {
		return fmt.Errorf("%w (svcd serve -h lists the flags)", err)
	}
	return fmt.Errorf("%w (did you mean -%s?)", err, best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
