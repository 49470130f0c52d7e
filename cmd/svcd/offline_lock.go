package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/svcd/svcd/supervisor/datalock"
)

// lockStopped takes the data dir lock for an offline tool (recover,
// snapshot) so it never writes under a running daemon. A dir that does not
// exist yet needs no lock (a restore into a fresh dir).
func lockStopped(tool, dataDir string) (release func(), err error) {
	if _, err := os.Stat(dataDir); errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	l, err := datalock.Acquire(dataDir)
	if err != nil {
		var held *datalock.HeldError
		if errors.As(err, &held) {
			return nil, fmt.Errorf("%s needs a stopped node: %w", tool, err)
		}
		return nil, err
	}
	return func() { l.Release() }, nil
}
