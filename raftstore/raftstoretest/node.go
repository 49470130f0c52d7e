// Package raftstoretest opens real raft stores for other packages' tests:
// one bootstrapped single-node store in a temporary directory, leading
// before it is handed out, shut down when the test ends.
package raftstoretest

import (
	"context"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// Node opens a single-node store in tb's temporary directory and waits
// until it leads.
func Node(tb testing.TB) *raftstore.Node {
	tb.Helper()
	n, err := raftstore.Open(raftstore.Config{DataDir: tb.TempDir(), Bootstrap: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		tb.Fatal(err)
	}
	return n
}
