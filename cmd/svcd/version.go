package main

import (
	"context"
	"fmt"

	"github.com/svcd/svcd/shared/version"
)

func runVersion(_ context.Context, _ []string) error {
	v := version.Get()
	fmt.Printf("svcd %s (commit %s, %s)\n", v.Version, v.Commit, v.GoVersion)
	return nil
}
