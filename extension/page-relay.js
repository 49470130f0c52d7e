// The page relay: runs in a platform page's MAIN world, so a relayed fetch
// carries the page's cookies and state exactly as the page's own requests.
// The service worker registers it once (chrome.scripting
// registerContentScripts, document_start, the platforms' origins only) and
// injects it into a page that was open before (the same file). For each
// request, by the nonce the content script forwards it under, it performs
// the fetch and posts the head and body back; a cancel aborts that fetch.
// A stream's chunks that arrive within one task go back as one message (a
// burst of SSE events is one hop, not one per network read).
//
// The content script and this relay talk by CustomEvents on window (JSON
// text as detail, which crosses the two JS worlds): dispatchEvent runs the
// other world's listener at once, in the same task, where a
// window.postMessage waited for a task of its own each way (wave 6,
// docs/performance.md "Floors of the extension path"). The version in the
// mark tells a content script this relay speaks events: an older relay
// left in a page (postMessage, mark '1') makes the worker inject this one.
(() => {
  // The content script (another JS world, same DOM) sees this mark: a page
  // without it makes the worker put the relay in again. Put in again, the
  // relay marks the page once more (whatever changed the mark since).
  const mark = () => { document.documentElement.dataset.svcdPageRelay = '2'; };
  const markNow = () => { if (document.documentElement) mark(); else document.addEventListener('readystatechange', mark, { once: true }); };
  // lib/pagecapture.js ran just before in this world and left its
  // functions here: taken, and the name cleared before the page's scripts.
  const capture = globalThis.__svcdPageCapture;
  delete globalThis.__svcdPageCapture;
  if (window.__svcdPageRelay2) { markNow(); return; }
  window.__svcdPageRelay2 = true;
  markNow();
  // The page's fetch as it was before the capture wrapped it: the relayed
  // requests go through it, so they are never reported as the page's own.
  const nativeFetch = window.fetch;
  if (capture) watchPageRequests(capture);
  const running = new Map(); // nonce -> AbortController
  // The downgrade case: a content script older than the CustomEvents (wave
  // 5: it took any mark and talks by window.postMessage) left in a page
  // that now holds this relay. Unanswered, its relays hung until their
  // timeout; each is refused at once, as stale, so the worker says to
  // reload the page instead of waiting.
  window.addEventListener('message', (ev) => {
    if (ev.source !== window || !ev.data || typeof ev.data.svcdRelay !== 'string') return;
    if (ev.data.req && ev.data.req.cancel) return;
    window.postMessage({ svcdRelayReply: ev.data.svcdRelay, msg: { error: true, stale: true } }, '*');
  });
  window.addEventListener('svcd-relay', async (ev) => {
    let d;
    try { d = JSON.parse(ev.detail); } catch { return; }
    if (!d || typeof d.n !== 'string' || !d.req) return;
    const nonce = d.n;
    const req = d.req;
    if (req.cancel) { const c = running.get(nonce); if (c) c.abort(); running.delete(nonce); return; }
    if (running.has(nonce)) return;
    const ctl = new AbortController();
    running.set(nonce, ctl);
    const reply = (msg) => window.dispatchEvent(new CustomEvent('svcd-relay-reply', { detail: JSON.stringify({ n: nonce, msg }) }));
    const timer = setTimeout(() => ctl.abort(), req.timeoutMs);
    try {
      const r = await nativeFetch.call(window, req.path, { method: req.method, headers: req.headers, body: req.body, credentials: 'include', signal: ctl.signal });
      const headers = {};
      r.headers.forEach((v, k) => { headers[k] = v; });
      if (!req.stream) {
        // A buffered answer: head and the whole body in one message.
        const body = await r.text();
        reply({ head: true, status: r.status, headers, chunk: body, end: true });
        return;
      }
      reply({ head: true, status: r.status, headers });
      const rd = r.body.getReader();
      const dec = new TextDecoder();
      // A read that comes after a quiet spell goes at once (a model's
      // tokens, one at a time, wait for nothing); the reads that follow it
      // within the same task are sent together once that task is over (a
      // burst is one hop, not one per network read). The tick is a task of
      // its own through a MessageChannel: setTimeout is throttled to a
      // second in a background tab, a channel message is not.
      let pending = '';
      let inTick = false;
      const tick = new MessageChannel();
      tick.port1.onmessage = () => {
        inTick = false;
        if (!pending) return;
        const c = pending;
        pending = '';
        reply({ chunk: c });
        inTick = true;
        tick.port2.postMessage(0);
      };
      for (;;) {
        const { value, done } = await rd.read();
        if (done) break;
        const text = dec.decode(value, { stream: true });
        if (inTick) { pending += text; continue; }
        reply({ chunk: text });
        inTick = true;
        tick.port2.postMessage(0);
      }
      if (pending) reply({ chunk: pending });
      tick.port1.close();
      reply({ end: true });
    } catch {
      reply({ error: true, aborted: ctl.signal.aborted });
    } finally { clearTimeout(timer); running.delete(nonce); }
  });
  // watchPageRequests is the default header capture (issue 36): the names
  // of the headers the page's own scripts set on fetch and XMLHttpRequest
  // requests to its own origin, the values of the credential ones, and its
  // /api/ endpoints, reported to the worker through the content script only
  // when something is new (lib/pagecapture.js Recorder). The wrappers are
  // Proxies of the originals (name and length stay the native ones, and
  // toString still reads [native code]), look before they call the original in the same call, never read
  // a body, and swallow their own errors: a capture problem never breaks or
  // delays the page's request. Nothing goes to the console.
  function watchPageRequests({ Recorder, fetchHead, mergeReports }) {
    const rec = new Recorder(location.origin);
    let held = null; // what was seen before the content script listened
    const bridgeHere = () => document.documentElement && document.documentElement.dataset.svcdBridge === '1';
    const emit = (r) => window.dispatchEvent(new CustomEvent('svcd-capture', { detail: JSON.stringify(r) }));
    const seen = (head) => {
      const r = head && rec.observe(head);
      if (!r) return;
      if (bridgeHere()) { emit(r); return; }
      held = mergeReports(held, r);
    };
    // The content script (document_idle, after this) asks for what it missed.
    window.addEventListener('svcd-capture-pull', () => { if (held) { const r = held; held = null; emit(r); } });
    window.fetch = new Proxy(nativeFetch, {
      apply(target, self, args) {
        try { seen(fetchHead(args[0], args[1], location.href)); } catch { /* the page's request goes on */ }
        return Reflect.apply(target, self, args);
      },
    });
    const X = window.XMLHttpRequest && window.XMLHttpRequest.prototype;
    if (!X) return;
    const opened = new WeakMap(); // xhr -> { method, url, headers }
    const wrap = (name, before) => {
      const orig = X[name];
      if (typeof orig !== 'function') return;
      X[name] = new Proxy(orig, {
        apply(target, self, args) {
          try { before(self, args); } catch { /* the page's request goes on */ }
          return Reflect.apply(target, self, args);
        },
      });
    };
    wrap('open', (xhr, [method, url]) => {
      let u = null;
      try { u = new URL(String(url), location.href); } catch { /* open throws itself */ }
      opened.set(xhr, { method: String(method || 'GET').toUpperCase(), url: u, headers: [] });
    });
    wrap('setRequestHeader', (xhr, [k, v]) => { const o = opened.get(xhr); if (o && o.headers.length < 256) o.headers.push([String(k), String(v)]); });
    wrap('send', (xhr) => { const o = opened.get(xhr); if (o) { opened.delete(xhr); seen(o); } });
  }
})();
