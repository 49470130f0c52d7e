// Package didyoumean finds the word a person probably meant: the nearest
// command or flag name to a mistyped one, for svcd's and svcctl's "did you
// mean" hints.
package didyoumean

import "strings"

// Nearest is the candidate a typo of word most likely meant: one that word
// is a cut-short start of (three letters at least: "-timeout" for
// "-timeout-ms"), else the nearest by edit distance when it is within a
// third of word's length (at least two edits). Ties go to the first
// candidate, so callers pass them in a stable order.
func Nearest(word string, candidates []string) (string, bool) {
	if len(word) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, word) {
				return c, true
			}
		}
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		if d := EditDistance(word, c); bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	// Farther than a third of the word is a guess, not a typo.
	if best == "" || bestDist > max(2, len(word)/3) {
		return "", false
	}
	return best, true
}

// EditDistance is the Levenshtein distance between a and b.
func EditDistance(a, b string) int {
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
