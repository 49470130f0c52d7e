package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/svcd/svcd/shared/version"
)

// runVersion prints the build: version, commit, the commit's date and the Go
// version (-json: the same object GET /version serves).
func runVersion(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("svcd version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the GET /version object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := version.Get()
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(v)
	}
	fmt.Printf("svcd %s\n", v)
	return nil
}
