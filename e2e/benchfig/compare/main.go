// Command compare prints two scripts/bench result files side by side: for
// each figure, the ratios to the same run's baseline before and after.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/svcd/svcd/e2e/benchfig"
)

type run struct {
	TakenAt string            `json:"taken_at"`
	Commit  string            `json:"commit"`
	Figures []benchfig.Figure `json:"figures"`
}

func load(path string) (run, error) {
	var r run
	raw, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(raw, &r)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: compare OLD.json NEW.json")
		os.Exit(2)
	}
	old, err := load(os.Args[1])
	if err == nil {
		var nw run
		if nw, err = load(os.Args[2]); err == nil {
			print(old, nw)
			return
		}
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func print(old, nw run) {
	byID := map[string][2]*benchfig.Figure{}
	for i := range old.Figures {
		e := byID[old.Figures[i].ID]
		e[0] = &old.Figures[i]
		byID[old.Figures[i].ID] = e
	}
	for i := range nw.Figures {
		e := byID[nw.Figures[i].ID]
		e[1] = &nw.Figures[i]
		byID[nw.Figures[i].ID] = e
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	fmt.Printf("%-4s %-28s %-28s\n", "", old.Commit+" "+old.TakenAt, nw.Commit+" "+nw.TakenAt)
	side := func(f *benchfig.Figure) string {
		if f == nil || f.Subject.N == 0 {
			return "-"
		}
		s := fmt.Sprintf("%.2fx p50 (%.0fµs)", f.RatioP50, f.Subject.P50us)
		if f.RatioRPS > 0 {
			s += fmt.Sprintf(" %.2fx rps (%.0f/s)", f.RatioRPS, f.Subject.ReqPerS)
		}
		return s
	}
	for _, id := range ids {
		e := byID[id]
		fmt.Printf("%-4s %-28s %-28s\n", id, side(e[0]), side(e[1]))
		for _, k := range extraKeys(e) {
			fmt.Printf("     %-28s %-28s %s\n", extra(e[0], k), extra(e[1], k), k)
		}
	}
}

func extraKeys(e [2]*benchfig.Figure) []string {
	seen := map[string]bool{}
	for _, f := range e {
		if f != nil {
			for k := range f.Extra {
				seen[k] = true
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func extra(f *benchfig.Figure, k string) string {
	if f == nil {
		return "-"
	}
	if v, ok := f.Extra[k]; ok {
		return fmt.Sprintf("%.1f", v)
	}
	return "-"
}
