package chaos

import (
	"os"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// TestMain removes the svcd binary the harness built once the run is done.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
