package harness

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// NetLab is three test hosts (n1, n2 and the witness n3) in network
// namespaces the test creates, joined by a bridge in a fourth namespace; n1
// and n2 also get a point-to-point client link from the test's own
// namespace, so the test can talk to a node that is cut off from the
// others. Addresses are the lab's own (10.231.X.0/24 between hosts,
// 100.97.X.0/24 and 100.98.X.0/24 for the client links: inside
// 100.64.0.0/10, the only non-loopback peers the browser bridge may be
// configured to take, browser_allowed_peers); nothing leaves these
// namespaces. Cut and Heal take a host off the bridge and back.
type NetLab struct {
	id     string
	octet  int
	prefix string
}

// NS is the name of the lab's namespace name ("n1", "n2", "n3", "br").
func (l *NetLab) NS(name string) string { return l.prefix + "-" + name }

// HostIP is host i's address on the bridge (raft, forwards, the witness).
func (l *NetLab) HostIP(i int) string { return fmt.Sprintf("10.231.%d.%d", l.octet, i) }

// ClientIP is host i's end of its client link (i = 1, 2).
func (l *NetLab) ClientIP(i int) string { return fmt.Sprintf("100.%d.%d.2", 96+i, l.octet) }

// RootIP is the test's end of host i's client link: a server the test runs
// there is reachable from host i (e.g. the fake model for n1's Codex).
func (l *NetLab) RootIP(i int) string { return fmt.Sprintf("100.%d.%d.1", 96+i, l.octet) }

// Exec is the command prefix that runs a program in host i's network
// namespace. nsenter --net changes the network namespace only: `ip netns
// exec` also remounts /sys, which hides /sys/fs/cgroup (the exec sandbox's
// cgroups) from the program.
func (l *NetLab) Exec(i int) []string {
	return []string{"nsenter", "--net=/run/netns/" + l.NS(fmt.Sprintf("n%d", i)), "--"}
}

func labIP(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// NetLabUnavailable says why this process cannot build a NetLab ("" when it
// can try): network namespaces need root, iproute2's ip and nsenter.
func NetLabUnavailable() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root (not root)"
	}
	for _, bin := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(bin); err != nil {
			return bin + " is not installed"
		}
	}
	return ""
}

// NewNetLab builds the lab, removed when the test ends. Where namespaces
// cannot be made it skips, or under CI=true (a machine that has them)
// fails.
func NewNetLab(t testing.TB) *NetLab {
	t.Helper()
	unavailable := func(why string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("network namespace lab: %s", why)
		}
		t.Skipf("network namespace lab (skipped): %s", why)
	}
	if why := NetLabUnavailable(); why != "" {
		unavailable(why)
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	l := &NetLab{id: hex.EncodeToString(b), octet: 100 + int(b[0])%100}
	l.prefix = "svcd" + l.id
	if out, err := exec.Command("ip", "netns", "add", l.NS("br")).CombinedOutput(); err != nil {
		unavailable(fmt.Sprintf("ip netns add is not permitted here: %v %s", err, out))
	}
	t.Cleanup(func() {
		// The root-side ends first: a namespace is freed asynchronously, and
		// its veth peers would linger in the test's namespace until then.
		for i := 1; i <= 2; i++ {
			_ = exec.Command("ip", "link", "del", fmt.Sprintf("h%s%d", l.id, i)).Run()
		}
		for _, n := range []string{"n1", "n2", "n3", "br"} {
			_ = exec.Command("ip", "netns", "del", l.NS(n)).Run()
		}
	})
	labIP(t, "-n", l.NS("br"), "link", "add", "br0", "type", "bridge")
	labIP(t, "-n", l.NS("br"), "link", "set", "br0", "up")
	for i := 1; i <= 3; i++ {
		ns := l.NS(fmt.Sprintf("n%d", i))
		in, out := fmt.Sprintf("c%s%d", l.id, i), fmt.Sprintf("b%s%d", l.id, i)
		labIP(t, "netns", "add", ns)
		labIP(t, "-n", ns, "link", "set", "lo", "up")
		labIP(t, "link", "add", in, "type", "veth", "peer", "name", out)
		labIP(t, "link", "set", in, "netns", ns)
		labIP(t, "link", "set", out, "netns", l.NS("br"))
		labIP(t, "-n", l.NS("br"), "link", "set", out, "master", "br0", "up")
		labIP(t, "-n", ns, "addr", "add", l.HostIP(i)+"/24", "dev", in)
		labIP(t, "-n", ns, "link", "set", in, "up")
		if i <= 2 { // client links to the two full nodes
			k, h := fmt.Sprintf("k%s%d", l.id, i), fmt.Sprintf("h%s%d", l.id, i)
			labIP(t, "link", "add", k, "type", "veth", "peer", "name", h)
			labIP(t, "link", "set", k, "netns", ns)
			labIP(t, "addr", "add", l.RootIP(i)+"/24", "dev", h)
			labIP(t, "link", "set", h, "up")
			labIP(t, "-n", ns, "addr", "add", l.ClientIP(i)+"/24", "dev", k)
			labIP(t, "-n", ns, "link", "set", k, "up")
		}
	}
	return l
}

// Cut takes host i off the bridge (its client link stays).
func (l *NetLab) Cut(t testing.TB, i int) {
	labIP(t, "-n", l.NS("br"), "link", "set", fmt.Sprintf("b%s%d", l.id, i), "down")
}

// Heal puts host i back on the bridge.
func (l *NetLab) Heal(t testing.TB, i int) {
	labIP(t, "-n", l.NS("br"), "link", "set", fmt.Sprintf("b%s%d", l.id, i), "up")
}
