package config

import (
	"flag"
	"fmt"
	"strings"

	"github.com/svcd/svcd/shared/didyoumean"
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
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	best, ok := didyoumean.Nearest(strings.TrimLeft(given, "-"), names)
	if !ok {
		return fmt.Errorf("%w (svcd serve -h lists the flags)", err)
	}
	return fmt.Errorf("%w (did you mean -%s?)", err, best)
}
