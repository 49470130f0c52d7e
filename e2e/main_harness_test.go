package e2e

import (
	"os"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// TestMain removes the svcd binary the harness built once the tests are done.
func TestMain(m *testing.M) {
	if servePlatformChild() || serveSkeletonChild() { // benchmarks' other processes
		return
	}
	os.Exit(harness.Main(m))
}
