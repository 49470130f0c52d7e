package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// loopState is one conversation's instruction loop as the extension's
// service worker keeps it (extension/lib/loop.js LoopGuard.state).
type loopState struct {
	Platform  string `json:"platform"`
	Rounds    int    `json:"rounds"`
	MaxRounds int    `json:"maxRounds"`
	Failures  int    `json:"failures"`
	Stopped   string `json:"stopped"`
	Skipped   int    `json:"skipped"`
}

func (b *browser) loops(t *testing.T, sw string) map[string]loopState {
	t.Helper()
	var st map[string]loopState
	if err := b.eval(sw, `chrome.storage.session.get('loops').then(s=>s.loops||{})`, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// waitLoop waits until the conversation's loop state satisfies cond.
func (b *browser) waitLoop(t *testing.T, sw, local, what string, cond func(loopState) bool) loopState {
	t.Helper()
	var last loopState
	waitUntil(t, 60*time.Second, what, func() bool {
		last = b.loops(t, sw)[local]
		return cond(last)
	})
	return last
}

// ingests counts the daemon's live-ingest log lines of one conversation
// with the given status (executed, user_message, …).
func ingests(d *harness.Daemon, local, status string) int {
	re := regexp.MustCompile(`status["=:]+` + regexp.QuoteMeta(status) + `\b`)
	n := 0
	for _, l := range strings.Split(d.Logs(), "\n") {
		if strings.Contains(l, "live ingest") && strings.Contains(l, local) && re.MatchString(l) {
			n++
		}
	}
	return n
}

// pressKey sends one real key press (a trusted keyDown and keyUp through
// DevTools) to whatever has the focus in the page.
func (b *browser) pressKey(t *testing.T, pg, key, code string, keyCode int, text string) {
	t.Helper()
	for _, typ := range []string{"keyDown", "keyUp"} {
		ev := map[string]any{"type": typ, "key": key, "code": code, "windowsVirtualKeyCode": keyCode}
		if text != "" && typ == "keyDown" {
			ev["text"] = text
		}
		if err := b.call(pg, "Input.dispatchKeyEvent", ev, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// userFrames are the role user conversation_message frames of conversation
// local the worker sent to the daemon; each must carry an id and no text.
func userFrames(t *testing.T, b *browser, local string) (ids []string) {
	t.Helper()
	for _, f := range strings.Split(b.frames.String(), "\n") {
		var m struct {
			Type, Role, Text string
			LocalID          string `json:"local_conversation_id"`
			MessageID        string `json:"message_id"`
		}
		if json.Unmarshal([]byte(f), &m) != nil || m.Type != "conversation_message" || m.Role != "user" || m.LocalID != local {
			continue
		}
		if m.MessageID == "" || m.Text != "" {
			t.Fatalf("the user message on the wire: %s", f)
		}
		ids = append(ids, m.MessageID)
	}
	return ids
}

// waitUserFrames waits until the worker's role user frames of conversation
// local number at least n and returns their ids. The frames are DevTools'
// Network events, which reach the test on their own connection: a daemon
// log line that the frame caused can be read before the event that shows
// the frame arrives, so a count read right after the daemon's is early.
func waitUserFrames(t *testing.T, b *browser, local string, n int) (ids []string) {
	t.Helper()
	waitUntil(t, 10*time.Second, fmt.Sprintf("%d user messages of %s on the wire", n, local), func() bool {
		ids = userFrames(t, b, local)
		return len(ids) >= n
	})
	return ids
}

// neverLeft fails when secret reached the wire, the daemon's log or its data dir.
func neverLeft(t *testing.T, b *browser, d *harness.Daemon, secret string) {
	t.Helper()
	if strings.Contains(b.frames.String(), secret) {
		t.Fatalf("%q in a frame to the daemon", secret)
	}
	if strings.Contains(d.Logs(), secret) {
		t.Fatalf("%q in the daemon's log", secret)
	}
	if out, _ := exec.Command("grep", "-r", "-l", secret, d.DataDir).Output(); len(out) > 0 {
		t.Fatalf("%q in the daemon's data dir: %s", secret, out)
	}
}

func reports(texts []string) []string {
	var out []string
	for _, s := range texts {
		if strings.HasPrefix(s, "[instr-result]") {
			out = append(out, s)
		}
	}
	return out
}

// TestExtensionLoopRules runs the instruction client loop in real Chromium
// against the real daemon and the fake platform's scripted AI, which answers
// every report with another instr block: the extension's loop rules (round
// limit 3 here, the daemon's stays at 10) stop it after its round limit,
// after three failed rounds with the error summary typed into the page, and
// at once when the user types; the message the user then sends reaches the
// daemon as role user (its id, not its text) and starts a new loop.
func TestExtensionLoopRules(t *testing.T) {
	b := startBrowser(t)
	d := extensionDaemon(t)
	site := newFakeSite("platform_a", "CANARYl00p")
	defer site.Close()
	sw := b.worker()
	b.recordFrames(sw)
	if err := b.eval(sw, `chrome.storage.local.set({loop:{maxRounds:3}}).then(()=>true)`, nil); err != nil {
		t.Fatal(err)
	}
	configure(t, b, sw, d, map[string]string{"platform_a": site.URL})
	waitUntil(t, 15*time.Second, "the extension connected", func() bool { return extConnected(t, d, "chromium-e2e") })
	// The two long loops run side by side in their own tabs.
	b.openTab(site.URL + "/c/loop-r")
	b.openTab(site.URL + "/c/fail-f")

	t.Run("user_typing", func(t *testing.T) {
		b.openTab(site.URL + "/c/type-u")
		pg := b.attach(b.waitTarget("page", site.URL+"/c/type-u", 10*time.Second).TargetID)
		// The reply is reported (one round): the daemon executes it and sends
		// the report, which the extension holds for 2 s before typing it.
		b.waitLoop(t, sw, "conv-type-u", "the first round", func(l loopState) bool { return l.Rounds == 1 })
		// Keys outside the input box are not typing: scrolling the page and
		// Escape leave the loop running, the report is typed and the AI's
		// next block is the second round.
		if err := b.eval(pg, `document.activeElement && document.activeElement.blur(), document.activeElement === document.body`, nil); err != nil {
			t.Fatal(err)
		}
		b.pressKey(t, pg, "PageDown", "PageDown", 34, "")
		b.pressKey(t, pg, "Escape", "Escape", 27, "")
		waitUntil(t, 20*time.Second, "the first report typed", func() bool { return len(reports(site.sentIn("type-u"))) == 1 })
		l := b.waitLoop(t, sw, "conv-type-u", "the second round", func(l loopState) bool { return l.Rounds == 2 || l.Stopped != "" })
		if l.Stopped != "" {
			t.Fatalf("keys outside the input box stopped the loop: %+v", l)
		}
		// A key in the input box is the user typing: the loop stops at once.
		if err := b.eval(pg, `document.getElementById('prompt').focus(), true`, nil); err != nil {
			t.Fatal(err)
		}
		b.pressKey(t, pg, "h", "KeyH", 72, "h")
		l = b.waitLoop(t, sw, "conv-type-u", "the loop stopped by typing", func(l loopState) bool { return l.Stopped != "" })
		if l.Stopped != "user typing" {
			t.Fatalf("stopped for %q", l.Stopped)
		}
		// The daemon logs the ingest once the extension answered the inject.
		waitUntil(t, 20*time.Second, "the second round's ingest to finish", func() bool { return ingests(d, "conv-type-u", "executed") == 2 })
		if r := reports(site.sentIn("type-u")); len(r) != 1 {
			t.Fatalf("the second round's report was typed although the user typed: %q", r)
		}
		// The daemon says why the report was not typed back.
		if l := grepLines(d.Logs(), "report not injected"); !strings.Contains(l, "conv-type-u") || !strings.Contains(l, "user_typing") {
			t.Fatalf("no log of the refused injection:\n%s", l)
		}

		// The user sends their message: the daemon hears role user, the loop
		// starts again and the AI's next instr block runs.
		const userText = "please go on USERTEXT7"
		if err := b.eval(pg, fmt.Sprintf(`document.getElementById('prompt').value=%q, document.getElementById('send').click(), true`, userText), nil); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 20*time.Second, "the user message at the daemon", func() bool { return ingests(d, "conv-type-u", "user_message") == 1 })
		deadline := time.Now().Add(30 * time.Second)
		for len(reports(site.sentIn("type-u"))) != 2 {
			if time.Now().After(deadline) {
				t.Fatalf("no report after the user's message: loop %+v, sent %q\n%s", b.loops(t, sw)["conv-type-u"], site.sentIn("type-u"), grepLines(d.Logs(), "type-u"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Metadata only: the message's id reached the daemon, its words did not.
		if ids := waitUserFrames(t, b, "conv-type-u", 1); len(ids) != 1 {
			t.Fatalf("%d user messages on the wire, want 1:\n%s", len(ids), b.frames.String())
		}
		neverLeft(t, b, d, "USERTEXT7")
		if l := b.loops(t, sw)["conv-type-u"]; l.Stopped != "" || l.Rounds != 1 {
			t.Fatalf("after the user's message: %+v", l)
		}
	})

	t.Run("user_paste", func(t *testing.T) {
		b.openTab(site.URL + "/c/type-p")
		pg := b.attach(b.waitTarget("page", site.URL+"/c/type-p", 10*time.Second).TargetID)
		// The extension types its own report into the input box (a synthetic
		// input event): that is not the user typing, the loop goes on.
		b.waitLoop(t, sw, "conv-type-p", "the first round", func(l loopState) bool { return l.Rounds == 1 })
		waitUntil(t, 20*time.Second, "the first report typed", func() bool { return len(reports(site.sentIn("type-p"))) == 1 })
		l := b.waitLoop(t, sw, "conv-type-p", "the second round", func(l loopState) bool { return l.Rounds == 2 || l.Stopped != "" })
		if l.Stopped != "" {
			t.Fatalf("the extension's own typing stopped the loop: %+v", l)
		}
		// Text that comes with no key (a paste with the mouse, an input
		// method): DevTools inserts it as the browser would, trusted
		// beforeinput and input events and no keydown. The loop stops at once.
		if err := b.eval(pg, `window.__keys = 0, document.addEventListener('keydown', () => window.__keys++, true), document.getElementById('prompt').focus(), true`, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.call(pg, "Input.insertText", map[string]any{"text": "pasted words"}, nil); err != nil {
			t.Fatal(err)
		}
		var keys int
		if err := b.eval(pg, `document.getElementById('prompt').value === 'pasted words' ? window.__keys : -1`, &keys); err != nil || keys != 0 {
			t.Fatalf("the insert: %d keydowns (-1: not in the box), %v", keys, err)
		}
		l = b.waitLoop(t, sw, "conv-type-p", "the loop stopped by the paste", func(l loopState) bool { return l.Stopped != "" })
		if l.Stopped != "user typing" {
			t.Fatalf("stopped for %q", l.Stopped)
		}
		waitUntil(t, 20*time.Second, "the second round's ingest to finish", func() bool { return ingests(d, "conv-type-p", "executed") == 2 })
		if r := reports(site.sentIn("type-p")); len(r) != 1 {
			t.Fatalf("the second round's report was typed although the user pasted: %q", r)
		}
		if l := grepLines(d.Logs(), "report not injected"); !strings.Contains(l, "conv-type-p") || !strings.Contains(l, "user_typing") {
			t.Fatalf("no log of the refused injection:\n%s", l)
		}
	})

	t.Run("long_page_id", func(t *testing.T) {
		// The page's reply id has 300 bytes and spaces: the daemon would
		// refuse it, so the extension names the reply by a hash of it. The
		// reply is executed once and its report typed back.
		b.openTab(site.URL + "/c/longid-x")
		waitUntil(t, 20*time.Second, "the report typed", func() bool { return len(reports(site.sentIn("longid-x"))) == 1 })
		// The AI's answer to the report has no instructions: the daemon
		// hears it, and by then it ran the first reply exactly once.
		waitUntil(t, 20*time.Second, "the answer to the report at the daemon", func() bool { return ingests(d, "conv-longid-x", "no_instructions") == 1 })
		if n := ingests(d, "conv-longid-x", "executed"); n != 1 {
			t.Fatalf("the daemon executed %d rounds, want 1:\n%s", n, grepLines(d.Logs(), "longid-x"))
		}
		if strings.Contains(b.frames.String(), longPageID) {
			t.Fatal("the page's id the daemon refuses went on the wire")
		}
		// The frames are DevTools' events, which may come after the
		// daemon's log of the second message: wait for both.
		var ids []string
		waitUntil(t, 10*time.Second, "both messages in DevTools' frames", func() bool {
			ids = nil
			for _, f := range strings.Split(b.frames.String(), "\n") {
				var m struct {
					Type      string
					LocalID   string `json:"local_conversation_id"`
					MessageID string `json:"message_id"`
				}
				if json.Unmarshal([]byte(f), &m) == nil && m.Type == "conversation_message" && m.LocalID == "conv-longid-x" {
					ids = append(ids, m.MessageID)
				}
			}
			return len(ids) >= 2
		})
		if len(ids) != 2 || !regexp.MustCompile(`^pid~[0-9a-f]{24}$`).MatchString(ids[0]) || ids[1] != "m-longid-x-2" {
			t.Fatalf("message ids on the wire: %q", ids)
		}
	})

	t.Run("round_limit", func(t *testing.T) {
		l := b.waitLoop(t, sw, "conv-loop-r", "the round limit", func(l loopState) bool { return l.Stopped != "" })
		if l.Stopped != "round limit reached" || l.Rounds != 3 || l.Skipped != 1 {
			t.Fatalf("loop state %+v", l)
		}
		// The daemon knows too: the extension reported the stop (conversation_loop).
		waitUntil(t, 10*time.Second, "the stop at the daemon", func() bool {
			cl, _ := convOf(t, d, "conv-loop-r")["client_loop"].(map[string]any)
			return cl != nil && cl["state"] == "stopped" && cl["reason"] == "round limit reached" && cl["rounds"] == 3.0 && cl["max_rounds"] == 3.0
		})
		// Three rounds ran and were reported back; the fourth reply was never
		// reported, so the daemon ran exactly three batches.
		waitUntil(t, 20*time.Second, "the third report typed", func() bool { return len(reports(site.sentIn("loop-r"))) == 3 })
		if n := ingests(d, "conv-loop-r", "executed"); n != 3 {
			t.Fatalf("the daemon executed %d rounds, want 3", n)
		}
		for _, r := range reports(site.sentIn("loop-r")) {
			if !strings.Contains(r, "-- @svc::status --\n成功") {
				t.Fatalf("report %q", r)
			}
		}
		// A reload does not restart the loop: the page's reply is held back too.
		pg := b.attach(b.waitTarget("page", site.URL+"/c/loop-r", 5*time.Second).TargetID)
		if err := b.call(pg, "Page.reload", nil, nil); err != nil {
			t.Fatal(err)
		}
		b.waitLoop(t, sw, "conv-loop-r", "the reloaded page's reply held back", func(l loopState) bool { return l.Skipped == 2 })
		if n := ingests(d, "conv-loop-r", "executed"); n != 3 {
			t.Fatalf("after the reload the daemon executed %d rounds, want 3", n)
		}
	})

	t.Run("three_failures", func(t *testing.T) {
		l := b.waitLoop(t, sw, "conv-fail-f", "the stop on failures", func(l loopState) bool { return l.Stopped != "" })
		if l.Stopped != "three failures in a row" || l.Failures != 3 {
			t.Fatalf("loop state %+v", l)
		}
		waitUntil(t, 10*time.Second, "the stop at the daemon", func() bool {
			cl, _ := convOf(t, d, "conv-fail-f")["client_loop"].(map[string]any)
			return cl != nil && cl["state"] == "stopped" && cl["reason"] == "three failures in a row"
		})
		waitUntil(t, 20*time.Second, "the error summary typed", func() bool { return len(reports(site.sentIn("fail-f"))) == 3 })
		r := reports(site.sentIn("fail-f"))
		for _, x := range r[:2] {
			if !strings.Contains(x, "-- @svc::nope --\n失败") {
				t.Fatalf("failed report %q", x)
			}
		}
		if !strings.Contains(r[2], "-- loop stopped --\n失败\n3 consecutive rounds failed") || !strings.Contains(r[2], "round 3: @svc::nope") {
			t.Fatalf("summary %q", r[2])
		}
		// The AI's answer to the summary is not run.
		b.waitLoop(t, sw, "conv-fail-f", "the next reply skipped", func(l loopState) bool { return l.Skipped >= 1 })
		if n := ingests(d, "conv-fail-f", "executed"); n != 3 {
			t.Fatalf("the daemon executed %d rounds, want 3", n)
		}
	})

	t.Run("overlay_and_popup", func(t *testing.T) {
		tabTarget := b.waitTarget("page", site.URL+"/c/loop-r", 5*time.Second).TargetID
		tab := b.attach(tabTarget)
		var overlay string
		waitUntil(t, 10*time.Second, "the loop stop in the overlay", func() bool {
			_ = b.eval(tab, `(document.getElementById('svcd-overlay')||{}).textContent||''`, &overlay)
			return strings.Contains(overlay, "loop conv-loop-r: stopped (round limit reached)")
		})
		if err := b.call("", "Target.createTarget", map[string]any{"url": "chrome-extension://" + extensionID + "/popup.html"}, nil); err != nil {
			t.Fatal(err)
		}
		b.screenshot(t, tabTarget, tab, "loop_overlay.png")
		popupTarget := b.waitTarget("page", "chrome-extension://"+extensionID+"/popup.html", 10*time.Second).TargetID
		pg := b.attach(popupTarget)
		var text string
		waitUntil(t, 10*time.Second, "the loops in the popup", func() bool {
			_ = b.eval(pg, "document.body.innerText", &text)
			return strings.Contains(text, "stopped: three failures in a row") && strings.Contains(text, "stopped: round limit reached")
		})
		b.screenshot(t, popupTarget, pg, "loop_popup.png")
	})

	// Last: it restarts the service worker, which the loops above must not see.
	t.Run("user_history", func(t *testing.T) {
		// The page loads with an earlier user message: it is reported once,
		// by id with no text, and the daemon ingests it (resetting its count).
		b.openTab(site.URL + "/c/hist-h")
		waitUntil(t, 20*time.Second, "the earlier user message at the daemon", func() bool { return ingests(d, "conv-hist-h", "user_message") == 1 })
		if ids := waitUserFrames(t, b, "conv-hist-h", 1); len(ids) != 1 {
			t.Fatalf("%d user messages on the wire, want 1:\n%s", len(ids), b.frames.String())
		}
		// A worker restart, then a reload: the new content script shows the
		// same message to a new worker, which remembers it and reports
		// nothing. The message the user sends next is the only new one; had
		// the old id gone again, the daemon would have logged a repeat first.
		b.restartWorker(t, d, "chromium-e2e")
		pg := b.attach(b.waitTarget("page", site.URL+"/c/hist-h", 5*time.Second).TargetID)
		if err := b.call(pg, "Page.reload", nil, nil); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, "the reloaded page", func() bool {
			var ok bool
			_ = b.eval(pg, `document.readyState === 'complete' && !!document.getElementById('send')`, &ok)
			return ok
		})
		if err := b.eval(pg, `document.getElementById('prompt').value='a new question USERHIST4', document.getElementById('send').click(), true`, nil); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 20*time.Second, "the new user message at the daemon", func() bool { return ingests(d, "conv-hist-h", "user_message") == 2 })
		if n := ingests(d, "conv-hist-h", "repeated"); n != 0 {
			t.Fatalf("the earlier user message was reported again (%d repeats):\n%s", n, grepLines(d.Logs(), "conv-hist-h"))
		}
		neverLeft(t, b, d, "USERHIST3")
		neverLeft(t, b, d, "USERHIST4")
	})
}
