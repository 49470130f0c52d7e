package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// The rolling upgrade of docs/ha.md, with the current binary on both sides:
// restart the standby, fail over by stopping the leader, restart the old
// leader. Writes go on throughout (through either node, retried on 503 and
// connection errors) and none that was acknowledged is lost: the final state
// is at least as new as the newest acknowledged write, on both nodes.
func TestHARollingUpgradeKeepsAcknowledgedWrites(t *testing.T) {
	c := startHACluster(t)
	leader, standby := c.n1, c.n2
	if r, _ := role(t, c.n2); r == "leader" {
		leader, standby = c.n2, c.n1
	}
	sw := &systemWriter{acked: map[uint64]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go sw.runRetrying([]string{c.n1.URL, c.n2.URL}, stop, &wg)
	waitUntil(t, 20*time.Second, "first writes", func() bool { return sw.lastAcked() > 5 })

	step := func(d *harness.Daemon, what string) {
		t.Helper()
		if err := d.Terminate(15 * time.Second); err != nil {
			t.Fatalf("%s: SIGTERM: %v", what, err)
		}
		if what == "fail over" {
			waitUntil(t, 20*time.Second, "the standby to take over", func() bool { r, _ := role(t, standby); return r == "leader" })
		}
		d.Restart()
		waitUntil(t, 30*time.Second, what+": the node to serve in the cluster again", func() bool {
			r, _ := role(t, d)
			return (r == "leader" || r == "standby") && memberCount(d) == 3
		})
		at := sw.lastAcked()
		waitUntil(t, 20*time.Second, what+": writes go on", func() bool { return sw.lastAcked() > at+3 })
	}
	step(standby, "restart the standby")
	step(leader, "fail over")
	close(stop)
	wg.Wait()

	newest := sw.lastAcked()
	for _, d := range []*harness.Daemon{c.n1, c.n2} {
		waitUntil(t, 10*time.Second, "the node to apply the newest write", func() bool { return sysStateOf(t, d).Version >= newest })
		b, err := os.ReadFile(filepath.Join(d.DataDir, "FORMAT"))
		if err != nil || !strings.Contains(string(b), `"format_version": 1`) {
			t.Fatalf("data dir format after the upgrade: %v %s", err, b)
		}
	}
	t.Logf("%d acknowledged writes through the rolling upgrade, newest version %d present on both nodes (%d transient errors retried)", len(sw.acked), newest, len(sw.errs))
}

// runRetrying is run against several nodes: each write goes to the next
// node, and errors (connection refused, 503 during the failover) are only
// counted, as a client following the documented retry rule would.
func (sw *systemWriter) runRetrying(nodes []string, stop <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	var inner sync.WaitGroup
	for {
		select {
		case <-stop:
			return
		default:
		}
		for _, d := range nodes {
			one := make(chan struct{})
			inner.Add(1)
			go func() { time.Sleep(50 * time.Millisecond); close(one) }()
			sw.run(d, one, &inner)
			inner.Wait()
		}
	}
}
