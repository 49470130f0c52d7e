package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// configureAs stores the daemon address and token the way the options page
// does, under clientID; the worker connects on the change.
func configureAs(t *testing.T, b *browser, sw string, d *harness.Daemon, clientID string) {
	t.Helper()
	// Three browsers starting at once on a loaded machine: the worker's
	// target can be attached before its extension APIs are bound.
	waitUntil(t, 20*time.Second, "the worker's extension APIs", func() bool {
		var ok bool
		return b.eval(sw, `typeof chrome !== 'undefined' && !!chrome.storage`, &ok) == nil && ok
	})
	js := fmt.Sprintf(`chrome.storage.local.set({daemonURL:%q, token:%q, clientId:%q}).then(()=>true)`, wsURL(d), d.Token, clientID)
	if err := b.eval(sw, js, nil); err != nil {
		t.Fatal(err)
	}
}

// metricSum adds up every sample of /metrics whose line holds all of subs.
func metricSum(t *testing.T, d *harness.Daemon, subs ...string) float64 {
	t.Helper()
	var sum float64
	for _, l := range strings.Split(string(d.Do("GET", "/metrics", nil).Body), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if !ok {
			continue
		}
		if i := strings.LastIndexByte(l, ' '); i > 0 {
			v, _ := strconv.ParseFloat(l[i+1:], 64)
			sum += v
		}
	}
	return sum
}

// TestExtensionReconnectThreeBrowsers: three Chromium instances (separate
// profiles) paired with one daemon; the daemon is killed, stays down long
// enough for the backoff to reach seconds between attempts, and comes back
// on the same address. Every browser is paired again within 2 s of the
// daemon answering /readyz (the extension's /readyz probe wakes it,
// lib/probe.js; the backoff alone would wait for its next step, seconds
// away; the 250 ms goal is the bench's E1reconnect), and no browser makes a
// storm of it: each pairs once, and the daemon sees at most two WebSocket
// upgrades per browser.
func TestExtensionReconnectThreeBrowsers(t *testing.T) {
	d := extensionDaemon(t)
	ids := []string{"tri-a1", "tri-b2", "tri-c3"}
	var browsers []*browser
	var sws []string
	for _, id := range ids {
		b := startBrowser(t)
		sw := b.worker()
		configureAs(t, b, sw, d, id)
		browsers, sws = append(browsers, b), append(sws, sw)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		all := true
		for _, id := range ids {
			all = all && extConnected(t, d, id)
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the three browsers are not all connected: %+v\n%s", readModel(t, d, "").Clients, grepLines(d.Logs(), "browser"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for round := 1; round <= 2; round++ {
		off := len(d.Logs())
		d.Kill()
		// Down for 4 s: the backoff's steps are 2-4 s apart by then.
		time.Sleep(4 * time.Second)
		d.Restart() // returns once /readyz answers 200
		ready := time.Now()
		paired := map[string]time.Duration{}
		for deadline := time.Now().Add(30 * time.Second); len(paired) < len(ids); time.Sleep(20 * time.Millisecond) {
			for _, l := range strings.Split(d.Logs()[off:], "\n") {
				for _, id := range ids {
					if _, seen := paired[id]; !seen && pairedLine(l, id) {
						paired[id] = time.Since(ready)
					}
				}
			}
			if time.Now().After(deadline) {
				for i, b := range browsers {
					var st any
					_ = b.eval(sws[i], `chrome.storage.session.get('status').then(s=>s.status&&{connected:s.status.connected,lastError:s.status.lastError})`, &st)
					t.Logf("%s: worker status %v", ids[i], st)
				}
				t.Fatalf("round %d: paired within 30 s: %v\n%s", round, paired, grepLines(d.Logs()[off:], "browser"))
			}
		}
		// Settle, then count what each browser did after the restart.
		time.Sleep(time.Second)
		logs := d.Logs()[off:]
		upgrades := metricSum(t, d, `svcd_http_requests_total{`, `route="GET /ws/browser"`)
		probes := metricSum(t, d, `svcd_http_requests_total{`, `route="GET /readyz"`)
		t.Logf("round %d: paired after /readyz 200: %v; WebSocket upgrades %v, /readyz answers %v (the test's own polls included)", round, paired, upgrades, probes)
		for _, id := range ids {
			// The goal (p95 <= 250 ms) is the bench's (E1reconnect); this
			// bound is its order under -race and a loaded machine, and far
			// below the backoff's next step after a 4 s outage (seconds).
			if paired[id] > 2*time.Second {
				t.Errorf("round %d: %s paired %s after the daemon was ready (bound: 2 s)", round, id, paired[id])
			}
			n := 0
			for _, l := range strings.Split(logs, "\n") {
				if pairedLine(l, id) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("round %d: %s paired %d times after the restart", round, id, n)
			}
		}
		if n := strings.Count(logs, "browser client paired"); n > 2*len(ids) {
			t.Errorf("round %d: %d pairings for %d browsers", round, n, len(ids))
		}
		if upgrades > float64(2*len(ids)) {
			t.Errorf("round %d: %v WebSocket upgrades for %d browsers", round, upgrades, len(ids))
		}
	}
}
