package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/svcd/svcd/supervisor/datalock"
)

// lockStopped takes the data dir lock for an offline tool (recover,
// snapshot) so it never writes under a running daemon. A dir that does not
// exist yet needs no lock (a restore into a fresh dir). online is the advice
// for a node that is running ("" when the tool has no online twin): the
// lock's own message tells a second daemon to pick another data dir, which
// is the wrong advice for an operator who wanted this node's data.
func lockStopped(tool, dataDir, online string) (release func(), err error) {
	if _, err := os.Stat(dataDir); errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	l, err := datalock.Acquire(dataDir)
	if err != nil {
		var held *datalock.HeldError
		if !errors.As(err, &held) {
			return nil, err
		}
		holder := "another process"
		if held.Pid > 0 {
			holder = "pid " + strconv.Itoa(held.Pid)
		}
		msg := fmt.Sprintf("%s needs a stopped node: data dir %s is in use by %s (lock file %s)", tool, held.Dir, holder, held.Path)
		if online != "" {
			return nil, fmt.Errorf("%s; against the running daemon use %s", msg, online)
		}
		return nil, fmt.Errorf("%s; stop that daemon first", msg)
	}
	return func() { l.Release() }, nil
}
