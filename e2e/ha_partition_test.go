package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// Cut the leader off: the majority side (n2 + witness) elects and serves,
// the cut-off old leader stops accepting writes within its lease, and after
// healing nothing acknowledged on either side is lost.
func TestHAPartition(t *testing.T) {
	l := harness.NewNetLab(t)
	const api, raftPort = "4317", "7001"
	node := func(i int, extra ...string) *harness.Daemon {
		ns := l.NS(fmt.Sprintf("n%d", i))
		args := append([]string{"-listen", "0.0.0.0:" + api, "-node-id", fmt.Sprintf("n%d", i),
			"-allowed-hosts", l.HostIP(i) + "," + l.ClientIP(i),
			"-api-advertise", l.HostIP(i) + ":" + api, "-raft-addr", l.HostIP(i) + ":" + raftPort}, extra...)
		return harness.Start(t, harness.Options{Addr: l.ClientIP(i) + ":" + api, Token: haToken, Prefix: []string{"ip", "netns", "exec", ns}, Args: args,
			Env: []string{"SVC_CLUSTER_TLS=off"}}) // plain raft off loopback, said explicitly (docs/ha.md, TLS)
	}
	n1 := node(1)
	n2 := node(2, "-join", l.HostIP(1)+":"+api)
	w := exec.Command("ip", "netns", "exec", l.NS("n3"), harness.Binary(t), "witness", "-node-id", "w",
		"-raft-addr", l.HostIP(3)+":"+raftPort, "-join", l.HostIP(1)+":"+api, "-data-dir", t.TempDir())
	w.Env = append(os.Environ(), "SVC_SHARED_TOKEN="+haToken, "SVC_CLUSTER_TLS=off")
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	waitUntil(t, 20*time.Second, "three members", func() bool {
		return memberCount(n1) == 3
	})
	if r, _ := role(t, n1); r != "leader" {
		t.Fatalf("n1 role %s", r)
	}

	// Steady writes on the majority side's node, retried by the documented rule.
	var acked, ambiguous atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 2 * time.Second}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			req, _ := http.NewRequest("POST", n2.URL+"/v1/system/mode", strings.NewReader(`{"mode":"`+[]string{"paused", "running"}[n%2]+`"}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				ambiguous.Add(1)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				acked.Add(1)
			} else {
				ambiguous.Add(1)
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)

	cutAt := time.Now()
	l.Cut(t, 1)
	waitUntil(t, 10*time.Second, "the majority side to elect n2", func() bool { r, _ := role(t, n2); return r == "leader" })
	t.Logf("n2 leads %v after the cut", time.Since(cutAt).Round(time.Millisecond))
	// The cut-off old leader has stepped down (its lease ran out) and takes no
	// write: it cannot reach a majority, and its forward finds no leader.
	waitUntil(t, 3*time.Second, "n1 to step down", func() bool { r, _ := role(t, n1); return r != "leader" })
	var n1Acked int
	for i := 0; i < 5; i++ {
		req, _ := http.NewRequest("POST", n1.URL+"/v1/system/pause", strings.NewReader(`{"reason":"cut off"}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				n1Acked++
			}
		}
	}
	if n1Acked != 0 {
		t.Fatalf("the cut-off old leader acknowledged %d writes", n1Acked)
	}
	before := acked.Load()
	waitUntil(t, 10*time.Second, "the majority side to take writes", func() bool { return acked.Load() > before+5 })

	l.Heal(t, 1)
	close(stop)
	wg.Wait()
	final := systemVersion(t, n2)
	waitUntil(t, 15*time.Second, "n1 to rejoin as standby and catch up", func() bool {
		r, _ := role(t, n1)
		return r == "standby" && systemVersion(t, n1) == final
	})
	a, amb := float64(acked.Load()), float64(ambiguous.Load())
	t.Logf("acknowledged %v, ambiguous %v, final version %v", a, amb, final)
	if final < a || final > a+amb {
		t.Fatalf("final version %v: want between %v acknowledged and %v", final, a, a+amb)
	}
}
