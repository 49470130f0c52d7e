package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// renewalOnceText is the renewal message of TestExtensionRenewalOnceAcrossDaemonCrash.
const renewalOnceText = "please continue RENEWAL-ONCE-7"

// TestExtensionRenewalOnceAcrossDaemonCrash: the real extension types a
// renewal into the fake site's page; while the site holds its answer to the
// page's send request, the daemon is frozen (SIGSTOP), the send completes and
// the extension answers into the frozen daemon's socket, then the daemon is
// killed (SIGKILL) and restarted. Recovery delivers the same job again with
// the same delivery_key; the extension answers duplicate without typing: the
// site received the renewal exactly once, and the job is done, marked
// duplicate. (With the extension's dedup taken out, the site receives it
// twice and this test fails.)
func TestExtensionRenewalOnceAcrossDaemonCrash(t *testing.T) {
	b := startBrowser(t)
	// One renewal at most: after it the conversation pauses itself, so the
	// site's count of the renewal text is about this one job.
	d := extensionDaemon(t, schedEnv("SVC_RENEWAL_MAX_RENEWALS=1", "SVC_RENEWAL_MESSAGE="+renewalOnceText)...)
	site := newFakeSite("platform_a", "CANARYonce")
	defer site.Close()
	sw := b.worker()
	b.recordFrames(sw)
	configure(t, b, sw, d, map[string]string{"platform_a": site.URL})
	waitUntil(t, 15*time.Second, "the extension connected", func() bool { return extConnected(t, d, "chromium-e2e") })

	// The page's reply runs an instruction; its report typed back ends the
	// batch, and the conversation is quiet from then on.
	b.openTab(site.URL + "/c/once1")
	waitUntil(t, 30*time.Second, "the report typed back", func() bool { return len(reports(site.sentIn("once1"))) > 0 })
	arrived, release := site.holdSend(renewalOnceText)
	if r := d.Do("POST", "/v1/renewal/conversations/conv-once1/auto", nil); r.Status != 200 {
		t.Fatalf("auto: %d %s", r.Status, r.Body)
	}
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatalf("the renewal never reached the site; daemon logs:\n%s", d.Logs())
	}
	first := waitRenewalInjects(t, b, 1)
	if len(first) != 1 || !strings.HasPrefix(first[0].DeliveryKey, "renewal:job-") {
		t.Fatalf("the renewal inject the extension received: %+v", first)
	}
	// Paused, the restarted daemon delivers nothing before the extension is
	// back (a due job waits for its plugin anyway; the pause keeps this test
	// about the key alone).
	if r := d.Do("POST", "/v1/system/pause", map[string]string{"reason": "until the extension reconnects"}); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}

	d.Stop()
	release()
	// The text was typed and sent: the extension remembers the key and
	// writes its inject_result into the socket of a daemon that never reads it.
	waitUntil(t, 20*time.Second, "the extension's answer to the frozen daemon", func() bool {
		var keys []string
		_ = b.eval(sw, `chrome.storage.session.get('delivered').then(s=>s.delivered||[])`, &keys)
		return contains(keys, first[0].DeliveryKey) && strings.Contains(b.frames.String(), `"inject_id":"`+first[0].InjectID+`"`)
	})
	d.Restart() // SIGKILL, then the same address and data dir
	if js := jobsOf(t, d, "conv-once1").Jobs; len(js) != 1 || js[0].Status != "pending" {
		t.Fatalf("after the crash want the job pending again: %+v", js)
	}
	waitUntil(t, 30*time.Second, "the extension back", func() bool { return extConnected(t, d, "chromium-e2e") })
	if r := d.Do("POST", "/v1/system/resume", map[string]string{"reason": "the extension is back"}); r.Status != 200 {
		t.Fatalf("resume: %d %s", r.Status, r.Body)
	}

	var job jobView
	waitUntil(t, 30*time.Second, "the job done after recovery", func() bool {
		js := jobsOf(t, d, "conv-once1").Jobs
		if len(js) != 1 {
			return false
		}
		job = js[0]
		return job.Status == "done" || job.Status == "failed"
	})
	all := waitRenewalInjects(t, b, 2)
	if len(all) != 2 || all[1].DeliveryKey != first[0].DeliveryKey || all[1].InjectID == first[0].InjectID {
		t.Fatalf("want the job delivered again with the same delivery_key: %+v", all)
	}
	if n := strings.Count(strings.Join(site.sentIn("once1"), "\n"), renewalOnceText); n != 1 {
		t.Fatalf("the site received the renewal %d times, want once", n)
	}
	if job.Status != "done" || !job.Duplicate || job.ID != all[0].jobID() {
		t.Fatalf("the job after recovery: %+v", job)
	}
	var dup bridgeproto.InjectResult
	waitUntil(t, 10*time.Second, "the extension's answer to the redelivery in DevTools' frames", func() bool {
		for _, l := range strings.Split(b.frames.String(), "\n") {
			if strings.Contains(l, `"inject_id":"`+all[1].InjectID+`"`) {
				return json.Unmarshal([]byte(l), &dup) == nil
			}
		}
		return false
	})
	if !dup.OK || !dup.Duplicate {
		t.Fatalf("the extension's answer to the redelivery: %+v", dup)
	}
	if !d.WaitLog("renewal already delivered", 5*time.Second) {
		t.Fatal("no info log of the duplicate")
	}
	if c := convOf(t, d, "conv-once1"); c["repeated_renewal_count"] != float64(1) {
		t.Fatalf("the conversation after recovery: %v", c)
	}
}

// renewalInject is a conversation_inject of kind renewal the extension received.
type renewalInject struct{ bridgeproto.ConversationInject }

// jobID is the job named in the delivery key (renewal:<job id>.<created>).
func (r renewalInject) jobID() string {
	id, _, _ := strings.Cut(strings.TrimPrefix(r.DeliveryKey, "renewal:"), ".")
	return id
}

// waitRenewalInjects waits until the worker received at least n renewal
// injections and returns them all. DevTools reports a frame on its own
// connection, and under load well after the daemon has the answer to it:
// a job the daemon shows done says nothing of whether the test has seen the
// frame yet (a read right after it found one inject where two were sent).
func waitRenewalInjects(t *testing.T, b *browser, n int) (got []renewalInject) {
	t.Helper()
	waitUntil(t, 10*time.Second, fmt.Sprintf("%d renewal injections in DevTools' frames", n), func() bool {
		got = renewalInjects(t, b)
		return len(got) >= n
	})
	return got
}

// renewalInjects are the renewal injections the worker received, in order.
func renewalInjects(t *testing.T, b *browser) []renewalInject {
	t.Helper()
	var out []renewalInject
	for _, l := range strings.Split(b.framesIn.String(), "\n") {
		if !strings.Contains(l, `"conversation_inject"`) {
			continue
		}
		var in renewalInject
		if err := json.Unmarshal([]byte(l), &in.ConversationInject); err != nil {
			t.Fatalf("a received frame: %v", err)
		}
		if in.Kind == bridgeproto.InjectRenewal {
			out = append(out, in)
		}
	}
	return out
}
