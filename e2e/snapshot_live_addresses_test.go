package e2e

import (
	"strings"
	"testing"
	"time"
)

// Issue 34 §5: after an online restore of another cluster's snapshot (same
// node ids, other addresses), /rolez and /v1/cluster on both nodes name
// the live leader's API address at once, not the snapshot's.
func TestOnlineRestoreKeepsLiveAddresses(t *testing.T) {
	a := startHAClusterEnv(t, nil)
	snap := a.n1.DoAuth("GET", "/v1/snapshot", nil)
	if snap.Status != 200 {
		t.Fatalf("snapshot of cluster a: %d", snap.Status)
	}
	a.stop()
	b := startHAClusterEnv(t, nil)
	if b.n1.Addr == a.n1.Addr {
		t.Fatal("the two clusters share an address; the test would prove nothing")
	}
	status, out := restoreSnap(t, b.n1, snap.Body, true)
	if status != 200 {
		t.Fatalf("restore into cluster b: %d %+v", status, out)
	}
	for _, d := range []struct {
		name string
		get  func() (string, string)
	}{
		{"n1 /rolez", func() (string, string) { return role(t, b.n1) }},
		{"n2 /rolez", func() (string, string) { return role(t, b.n2) }},
	} {
		// Right after the answer on the leader; a standby has applied the
		// restore once its log reached it (bounded wait).
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, api := d.get()
			if api == b.n1.Addr {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s names %q as the leader's API, want the live %q (the snapshot's was %q)", d.name, api, b.n1.Addr, a.n1.Addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if body := string(b.n1.Do("GET", "/v1/cluster", nil).Body); strings.Contains(body, a.n1.Addr) || !strings.Contains(body, b.n1.Addr) {
		t.Fatalf("/v1/cluster after the restore names the snapshot's addresses:\n%s", body)
	}
}
