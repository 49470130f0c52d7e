package e2e

import (
	"crypto/rand"
	"encoding/hex"
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

// netLab is three test hosts (n1, n2 and the witness) in network namespaces
// this test creates, joined by a bridge in a fourth namespace; n1 and n2
// also get a point-to-point client link from the test's own namespace, so
// the test can talk to a node that is cut off from the others. Addresses are
// the lab's own (10.231.X.0/24 between hosts, 10.233.X.0/24 and
// 10.234.X.0/24 for the client links); nothing leaves these namespaces.
type netLab struct {
	id     string
	octet  int
	prefix string
}

func (l *netLab) ns(name string) string { return l.prefix + "-" + name }
func (l *netLab) hostIP(i int) string   { return fmt.Sprintf("10.231.%d.%d", l.octet, i) }
func (l *netLab) clientIP(i int) string { return fmt.Sprintf("10.%d.%d.2", 232+i, l.octet) }

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newNetLab(t *testing.T) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the partition test needs root for ip netns (skipped: not root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the partition test needs iproute2's ip (skipped: not installed)")
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	l := &netLab{id: hex.EncodeToString(b), octet: 100 + int(b[0])%100}
	l.prefix = "svcd" + l.id
	if out, err := exec.Command("ip", "netns", "add", l.ns("br")).CombinedOutput(); err != nil {
		t.Skipf("ip netns add is not permitted here (skipped): %v %s", err, out)
	}
	t.Cleanup(func() {
		// The root-side ends first: a namespace is freed asynchronously, and
		// its veth peers would linger in the test's namespace until then.
		for i := 1; i <= 2; i++ {
			_ = exec.Command("ip", "link", "del", fmt.Sprintf("h%s%d", l.id, i)).Run()
		}
		for _, n := range []string{"n1", "n2", "n3", "br"} {
			_ = exec.Command("ip", "netns", "del", l.ns(n)).Run()
		}
	})
	ip(t, "-n", l.ns("br"), "link", "add", "br0", "type", "bridge")
	ip(t, "-n", l.ns("br"), "link", "set", "br0", "up")
	for i := 1; i <= 3; i++ {
		ns := l.ns(fmt.Sprintf("n%d", i))
		in, out := fmt.Sprintf("c%s%d", l.id, i), fmt.Sprintf("b%s%d", l.id, i)
		ip(t, "netns", "add", ns)
		ip(t, "-n", ns, "link", "set", "lo", "up")
		ip(t, "link", "add", in, "type", "veth", "peer", "name", out)
		ip(t, "link", "set", in, "netns", ns)
		ip(t, "link", "set", out, "netns", l.ns("br"))
		ip(t, "-n", l.ns("br"), "link", "set", out, "master", "br0", "up")
		ip(t, "-n", ns, "addr", "add", l.hostIP(i)+"/24", "dev", in)
		ip(t, "-n", ns, "link", "set", in, "up")
		if i <= 2 { // client links to the two full nodes
			k, h := fmt.Sprintf("k%s%d", l.id, i), fmt.Sprintf("h%s%d", l.id, i)
			ip(t, "link", "add", k, "type", "veth", "peer", "name", h)
			ip(t, "link", "set", k, "netns", ns)
			ip(t, "addr", "add", fmt.Sprintf("10.%d.%d.1/24", 232+i, l.octet), "dev", h)
			ip(t, "link", "set", h, "up")
			ip(t, "-n", ns, "addr", "add", l.clientIP(i)+"/24", "dev", k)
			ip(t, "-n", ns, "link", "set", k, "up")
		}
	}
	return l
}

// cut takes host i off the bridge (its client link stays); heal puts it back.
func (l *netLab) cut(t *testing.T, i int) {
	ip(t, "-n", l.ns("br"), "link", "set", fmt.Sprintf("b%s%d", l.id, i), "down")
}
func (l *netLab) heal(t *testing.T, i int) {
	ip(t, "-n", l.ns("br"), "link", "set", fmt.Sprintf("b%s%d", l.id, i), "up")
}

// Cut the leader off: the majority side (n2 + witness) elects and serves,
// the cut-off old leader stops accepting writes within its lease, and after
// healing nothing acknowledged on either side is lost.
func TestHAPartition(t *testing.T) {
	l := newNetLab(t)
	const api, raftPort = "4317", "7001"
	node := func(i int, extra ...string) *harness.Daemon {
		ns := l.ns(fmt.Sprintf("n%d", i))
		args := append([]string{"-listen", "0.0.0.0:" + api, "-node-id", fmt.Sprintf("n%d", i),
			"-allowed-hosts", l.hostIP(i) + "," + l.clientIP(i),
			"-api-advertise", l.hostIP(i) + ":" + api, "-raft-addr", l.hostIP(i) + ":" + raftPort}, extra...)
		return harness.Start(t, harness.Options{Addr: l.clientIP(i) + ":" + api, Token: haToken, Prefix: []string{"ip", "netns", "exec", ns}, Args: args})
	}
	n1 := node(1)
	n2 := node(2, "-join", l.hostIP(1)+":"+api)
	w := exec.Command("ip", "netns", "exec", l.ns("n3"), harness.Binary(t), "witness", "-node-id", "w",
		"-raft-addr", l.hostIP(3)+":"+raftPort, "-join", l.hostIP(1)+":"+api, "-data-dir", t.TempDir())
	w.Env = append(os.Environ(), "SVC_SHARED_TOKEN="+haToken)
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
	l.cut(t, 1)
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

	l.heal(t, 1)
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
