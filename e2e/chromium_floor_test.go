package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// The floors of the extension path (issue 24 E1, wave 6): what Chromium's
// own process hops cost with no code of ours on them, measured in the same
// run as E1relay and E1sse and interleaved with them. Both are driven in
// the service worker through CDP; nothing in the extension is added for
// them.
//
//   - tab echo: the worker's port to the tab's content script, its hop to
//     the page relay in the MAIN world, and back,
//     with no network: the request is a GET with a body, which the page's
//     fetch refuses at once (TypeError, nothing leaves the page), so the
//     extension's own content script and page relay answer it as an error.
//     Timed in the worker (performance.now, 100 us steps).
//   - page hop: the page relay's part of that echo alone, from the page's
//     MAIN world (a request to the page relay and its answer, the same
//     refused fetch), timed in the page: tab echo - page hop is the
//     worker <-> content script port, the cross-process part.
//   - worker socket: a second WebSocket from the same service worker to
//     the daemon, as client floorClientID, whose JS answers each
//     api_request at once (no tab, no fetch): the caller's relay through
//     it is the daemon plus the hops daemon <-> network service <-> worker
//     renderer, with none of sw.js's relay code. For a stream it sends
//     the events itself, stamped with the wall clock as the site stamps
//     them, so the caller reads their latency from the worker on.

const floorClientID = "sw-floor"

// floorSocketJS opens the worker-socket floor client in the service
// worker's global scope and resolves once the daemon said hello_ok and took
// its credentials frame. body is the buffered answer it gives.
func floorSocketJS(wsURL, token, body string) string {
	return fmt.Sprintf(`(async () => {
  if (globalThis.__svcdFloorSocket) return true;
  const ws = new WebSocket(%q);
  await new Promise((ok, bad) => { ws.onopen = ok; ws.onerror = () => bad(new Error('floor socket did not open')); });
  const paired = new Promise((ok, bad) => { ws.onmessage = (ev) => { const m = JSON.parse(ev.data);
    if (m.type === 'hello_ok') ok(); else if (m.type === 'error') bad(new Error('floor hello: ' + m.code)); }; });
  ws.send(JSON.stringify({type: 'hello', token: %q, clientId: %q, browser: 'chrome', extension_version: 'floor', platforms: ['platform_a'], shell_runtime: {tabs: 0}}));
  await paired;
  const wall = () => Math.round((performance.timeOrigin + performance.now()) * 1e6);
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type !== 'api_request') return;
    const id = m.requestId;
    if (m.responseMode !== 'sse') {
      ws.send(JSON.stringify({type: 'api_response', requestId: id, status: 200, headers: {'content-type': 'application/json'}, body: %q}));
      return;
    }
    ws.send(JSON.stringify({type: 'stream_open', requestId: id, status: 200, headers: {'content-type': 'text/event-stream'}}));
    const n = Number(new URL(m.path, 'http://floor').searchParams.get('n')) || 1;
    // One timer per event, i ms after the first (not a chain: Chromium
    // clamps nested timers to 4 ms), each event stamped as it goes.
    for (let i = 1; i <= n; i++) setTimeout(() => {
      ws.send(JSON.stringify({type: 'stream_event', requestId: id, seq: i, event: 'message', data: 't=' + wall()}));
      if (i === n) ws.send(JSON.stringify({type: 'stream_end', requestId: id}));
    }, i - 1);
  };
  ws.send(JSON.stringify({type: 'credentials', platform: 'platform_a', account: 'floor', host: '127.0.0.1', headers: {Authorization: 'Bearer floor'}, cookies: {sid: 'floor'}}));
  globalThis.__svcdFloorSocket = ws;
  return true; })()`, wsURL, token, floorClientID, body)
}

// tabEchoSetupJS defines __svcdTabEcho in the service worker: one echo
// over the worker's own port to the content script of the tab at siteURL
// (the extension's relays keep theirs), timed in the worker (µs). The port
// is opened at the first echo and again after the page went (a reload).
func tabEchoSetupJS(siteURL string) string {
	return fmt.Sprintf(`(() => {
  let port = null;
  const waiting = new Map();
  const open = async () => {
    const tab = (await chrome.tabs.query({})).find((t) => t.url && t.url.startsWith(%q));
    if (!tab) throw new Error('no tab of the site');
    const p = chrome.tabs.connect(tab.id, {name: 'svcd-relays'});
    p.onMessage.addListener(({n, msg}) => { const w = waiting.get(n); if (w) { waiting.delete(n); w(msg); } });
    p.onDisconnect.addListener(() => { if (port === p) port = null; for (const w of waiting.values()) w({gone: true}); waiting.clear(); });
    return p;
  };
  globalThis.__svcdTabEcho = async () => {
    if (!port) port = await open();
    const n = crypto.randomUUID();
    const got = new Promise((ok) => waiting.set(n, ok));
    const t0 = performance.now();
    // A GET with a body: the page's fetch refuses it before any network.
    port.postMessage({n, req: {method: 'GET', path: '/', headers: {}, body: 'x', timeoutMs: 5000, stream: false}});
    const msg = await got;
    const us = Math.round((performance.now() - t0) * 1000);
    if (!msg.error || msg.aborted) throw new Error('tab echo answered ' + JSON.stringify(msg));
    return us;
  };
  return true; })()`, siteURL)
}

// floors drives the two floor legs from the test.
type floors struct {
	t  *testing.T
	b  *browser
	sw string // the service worker's CDP session
}

// startFloors puts both floor legs in place in the service worker and
// waits until the daemon has the floor client's credentials.
func startFloors(t *testing.T, b *browser, sw string, d *harness.Daemon, siteURL, body string) *floors {
	t.Helper()
	if err := b.eval(sw, floorSocketJS(wsURL(d), d.Token, body), nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the floor client's credentials", func() bool {
		return len(readModel(t, d, "?client_id="+floorClientID+"&platform=platform_a").Records) > 0
	})
	if err := b.eval(sw, tabEchoSetupJS(siteURL), nil); err != nil {
		t.Fatal(err)
	}
	return &floors{t: t, b: b, sw: sw}
}

// tabEcho is one worker -> page -> worker round trip with no fetch.
func (f *floors) tabEcho() time.Duration {
	var us float64
	if err := f.b.eval(f.sw, `globalThis.__svcdTabEcho()`, &us); err != nil {
		f.t.Fatal(err)
	}
	return time.Duration(us * 1e3)
}

// pageHopJS is one page hop, timed in the page (µs): the page relay takes
// a request sent from the MAIN world as it takes the content script's (the
// content script ignores the answer: the nonce is not one of its). A page
// relay marked '2' talks by CustomEvents, an older one (an A/B's extension
// copy, mark '1') by window.postMessage.
const pageHopJS = `(async () => {
  const n = 'hop-' + crypto.randomUUID();
  const events = document.documentElement.dataset.svcdPageRelay === '2';
  const req = {method: 'GET', path: '/', headers: {}, body: 'x', timeoutMs: 5000, stream: false};
  const got = new Promise((ok) => {
    const type = events ? 'svcd-relay-reply' : 'message';
    const f = (ev) => {
      const r = events ? JSON.parse(ev.detail) : (ev.source === window && ev.data && {n: ev.data.svcdRelayReply, msg: ev.data.msg});
      if (!r || r.n !== n) return;
      removeEventListener(type, f); ok(r.msg); };
    addEventListener(type, f); });
  const t0 = performance.now();
  if (events) dispatchEvent(new CustomEvent('svcd-relay', {detail: JSON.stringify({n, req})}));
  else window.postMessage({svcdRelay: n, req}, '*');
  const msg = await got;
  const us = Math.round((performance.now() - t0) * 1000);
  if (!msg.error || msg.aborted) throw new Error('page hop answered ' + JSON.stringify(msg));
  return us; })()`

// pageHop is one page hop in the tab's session.
func (f *floors) pageHop(tab string) time.Duration {
	var us float64
	if err := f.b.eval(tab, pageHopJS, &us); err != nil {
		f.t.Fatal(err)
	}
	return time.Duration(us * 1e3)
}
