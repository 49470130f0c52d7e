// The service worker holds the one WebSocket to the daemon
// (docs/bridge-protocol.md). It reconnects by itself after any drop: a daemon
// restart, its own suspension (Chrome restarts the worker on the alarm or the
// next event, and the worker connects again at load), or ws_reconnect.
import { backoffDelay } from './lib/backoff.js';
import { ReadyProbe, readyzURL } from './lib/probe.js';
import { PLATFORMS } from './lib/adapters.js';
import { withOrigins, platformForURL, platformForOrigin, cutQuery } from './lib/pageurl.js';
import { sseParser } from './lib/sse.js';
import { streamFrames, CAP_STREAM_EVENTS } from './lib/batch.js';
import { credentialFingerprint as fingerprint, headerNames, mergeHeaders } from './lib/fingerprint.js';
import { ConversationLoops } from './lib/convloop.js';
import { DeliveredKeys } from './lib/delivered.js';
import { RESULT_MARKER } from './lib/loop.js';
import { Outbox, KEPT_TYPES } from './lib/outbox.js';
import { helloAuth, afterHelloOk, afterRefusal, RATE_LIMITED_BACKOFF } from './lib/pairing.js';
import { grantPlan, registrationSteps } from './lib/grants.js';

// lib/pagecapture.js (a classic script, loaded by lib/fingerprint.js): the
// check of what a page relay reports of the page's own requests.
const { acceptReport } = globalThis.__svcdPageCapture;

const VERSION = chrome.runtime.getManifest().version;
let ws = null;
let wsSince = 0; // when ws was opened
let helloSince = 0; // when ws sent its hello (0: not yet)
let attempt = 0;
let reconnectTimer = null;
let rateLimitedAttempt = 0; // retries after pairing_rate_limited since the last hello_ok
let keepaliveTimer = null;
let pairingError = null; // the last pairing refusal's error frame (code, message)
// What this connection's hello_ok took: batched stream events (lib/batch.js)
// and the daemon's frame size cap.
let daemonCaps = { batched: false, maxBytes: 0 };
let state = { connected: false, scopes: null, lastError: '', snapshot: null, captured: {}, accounts: {}, loops: {}, connectedAt: 0, pending: 0 };
const relays = new Map(); // requestId -> { cancel() } of its running fetch
// A request_cancel can overtake its relay: the relay awaits the adapters,
// the tab and the page's script before it is in relays. Such a cancel is
// kept here and the relay does not start; bounded, oldest first, for ids
// whose relay never comes.
const earlyCancels = new Set();

function cancelRelay(id) {
  const p = relays.get(id);
  if (p) { p.cancel(); return; }
  earlyCancels.add(id);
  if (earlyCancels.size > 256) earlyCancels.delete(earlyCancels.values().next().value);
}

// generatedClientId makes this profile's id once: two settings() calls at
// worker start would otherwise each make one, and the first connect would
// pair under an id the next one no longer reads.
let generatedIdOnce = null;
function generatedClientId() {
  if (!generatedIdOnce) {
    generatedIdOnce = (async () => {
      const { generatedClientId: g } = await chrome.storage.local.get('generatedClientId');
      if (g) return g;
      const id = 'ext-' + crypto.randomUUID().slice(0, 8);
      await chrome.storage.local.set({ generatedClientId: id });
      return id;
    })().catch((e) => { generatedIdOnce = null; throw e; });
  }
  return generatedIdOnce;
}

// settings: the options page's chrome.storage.local values over an optional
// bundled development config (config.local.json, never committed).
async function settings() {
  let local = {};
  try { const r = await fetch(chrome.runtime.getURL('config.local.json')); if (r.ok) local = await r.json(); } catch { /* none */ }
  const stored = await chrome.storage.local.get(['daemonURL', 'token', 'credential', 'pairingCode', 'clientId', 'generatedClientId', 'origins', 'loop']);
  const s = { ...local, ...Object.fromEntries(Object.entries(stored).filter(([, v]) => v)) };
  if (!s.clientId) {
    // A generated id goes under its own key: written to clientId, it could
    // land after the options page (or a test) set clientId between our get
    // and set, and the next connect would pair under the generated id.
    s.clientId = s.generatedClientId || await generatedClientId();
  }
  return { daemon: s.daemonURL || 'ws://127.0.0.1:4317/ws/browser', token: s.token || '', credential: s.credential || '', pairingCode: s.pairingCode || '', clientId: s.clientId, origins: s.origins || {}, loop: s.loop || {} };
}

// adapters are read once per worker life and settings change (every relay
// needs them: re-reading five files per request cost tens of milliseconds).
let adaptersCache = null;
function adapters() {
  if (!adaptersCache) adaptersCache = loadAdapters().catch((e) => { adaptersCache = null; throw e; });
  return adaptersCache;
}

async function loadAdapters() {
  const { origins } = await settings();
  const idx = await (await fetch(chrome.runtime.getURL('adapters/index.json'))).json();
  const list = await Promise.all(idx.map((f) => fetch(chrome.runtime.getURL('adapters/' + f)).then((r) => r.json())));
  return withOrigins(list, origins);
}

// send writes msg on an open socket once its hello went out: a frame
// before the hello (onopen awaits the tab list first) would make the daemon
// refuse the connection ("first message must be hello").
function send(msg) {
  if (ws && ws.readyState === WebSocket.OPEN && helloSince) ws.send(JSON.stringify(msg));
}

// sendPaired writes msg only on an open socket the daemon said hello_ok on;
// it says whether it did (the outbox keeps msg otherwise).
function sendPaired(msg) {
  if (!state.connected || !ws || ws.readyState !== WebSocket.OPEN) return false;
  ws.send(JSON.stringify(msg));
  return true;
}

// The conversation reports made while the socket is down wait in the outbox
// (lib/outbox.js, chrome.storage.session) and go out in order after the next
// hello_ok; the popup shows how many wait.
const outbox = new Outbox({
  load: async () => (await chrome.storage.session.get('outbox')).outbox,
  store: (entries) => chrome.storage.session.set({ outbox: entries }),
  trySend: sendPaired,
  onChange: (n) => { state.pending = n; publish(); },
});

// post sends a report: the conversation reports through the outbox, the
// rest (answers to one request on this connection, frames sent anew at
// every hello) only on an open socket.
function post(msg) {
  if (!KEPT_TYPES.has(msg.type)) return send(msg);
  outbox.post(msg).catch(() => console.warn('svcd: a report could not be queued'));
}

function publish() {
  chrome.storage.session.set({ status: statusView() }).catch(() => {});
}

// statusView is what the popup shows: state, names, labels, fingerprints and
// loop states; never a captured value.
function statusView() {
  return { connected: state.connected, scopes: state.scopes, lastError: state.lastError, snapshot: state.snapshot, captured: state.captured, accounts: state.accounts, loops: state.loops, pending: state.pending };
}

function scheduleReconnect(delay) {
  clearTimeout(reconnectTimer);
  const d = delay ?? backoffDelay(attempt++);
  reconnectTimer = setTimeout(connect, d);
  startProbe();
}

// While disconnected the worker also asks the daemon's /readyz (no token,
// nothing of this browser sent) every 50-100 ms, jittered, for the first
// 20 s of the drop, then every 1-2 s: when the daemon answers 200 after it
// was seen down or not ready, the worker connects at once instead of at the
// next backoff step (which, doubling, may be seconds away). Only that
// transition connects, once per probing round: a daemon that is up but
// refuses the socket gets no more attempts than the backoff gives it
// (lib/probe.js decides; docs/extension.md "Reconnect").
const probe = new ReadyProbe({
  check: async () => {
    const s = await settings();
    const r = await fetch(readyzURL(s.daemon), { cache: 'no-store', signal: AbortSignal.timeout(1000) });
    return r.status === 200;
  },
  // Until hello_ok: a socket opened while the daemon was starting may hang
  // in connecting (or never get its hello_ok) while the daemon is back.
  wanted: () => !state.connected,
  onBack: () => {
    if (ws && Date.now() - wsSince < 1000) return false; // young: ask again next tick
    // A hello in flight (sent under a second ago): its hello_ok may be on
    // the way; replacing the socket now pairs this browser twice.
    if (ws && helloSince && Date.now() - helloSince < 1000) return false;
    if (ws) { const s = ws; ws = null; s.onclose = null; try { s.close(); } catch {} }
    attempt = 0;
    connect();
    return true;
  },
});
function startProbe() { probe.start(); }

async function connect() {
  clearTimeout(reconnectTimer);
  const s = await settings();
  // One of credential, pairing code or (browser_pairing = "token") the
  // shared token: lib/pairing.js decides which the hello carries.
  const auth = helloAuth(s);
  if (!auth) { state.lastError = 'not paired: run svcctl browser pair and enter the code in the options page'; publish(); return; }
  pairingError = null;
  if (ws && (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING)) return;
  let sock;
  try { sock = new WebSocket(s.daemon); } catch (e) { state.lastError = 'bad daemon address'; scheduleReconnect(); return; }
  ws = sock;
  wsSince = Date.now();
  helloSince = 0;
  // Not paired until this socket's hello_ok: the outbox waits for it.
  state.connected = false;
  daemonCaps = { batched: false, maxBytes: 0 }; // until this socket's hello_ok says
  sock.onopen = async () => {
    const tabs = await platformTabs();
    if (ws === sock) helloSince = Date.now();
    sock.send(JSON.stringify({ type: 'hello', ...auth, clientId: s.clientId, browser: 'chrome', extension_version: VERSION, platforms: PLATFORMS, shell_runtime: { tabs: tabs.length }, capabilities: [CAP_STREAM_EVENTS] }));
  };
  sock.onmessage = (ev) => { if (ws === sock) outbox.heard(); let m; try { m = JSON.parse(ev.data); } catch { return; } onMessage(m).catch((e) => console.warn('svcd: handler failed', e && e.name)); };
  sock.onclose = (ev) => {
    if (ws !== sock) return;
    ws = null;
    state.connected = false;
    clearInterval(keepaliveTimer);
    for (const p of relays.values()) { try { p.cancel(); } catch {} }
    relays.clear();
    outbox.dropped();
    publish();
    if (ev.code === 4401) {
      probe.stop();
      // The daemon said why in an error frame just before the close; a
      // refused code or credential is dropped (it can never work again).
      // pairing_rate_limited is no verdict on what this browser holds:
      // retry with a slower backoff (lib/pairing.js).
      const code = pairingError && pairingError.code;
      const retryMs = code === 'pairing_rate_limited' ? backoffDelay(rateLimitedAttempt++, RATE_LIMITED_BACKOFF) : 0;
      const r = afterRefusal(code, pairingError && pairingError.message, retryMs);
      state.lastError = r.text; publish();
      if (r.remove.length) chrome.storage.local.remove(r.remove);
      if (r.retry) { clearTimeout(reconnectTimer); reconnectTimer = setTimeout(connect, retryMs); }
      return;
    }
    scheduleReconnect();
  };
}

async function onMessage(m) {
  switch (m.type) {
    case 'hello_ok': {
      attempt = 0; rateLimitedAttempt = 0;
      probe.stop();
      const u = afterHelloOk(m);
      if (Object.keys(u.set).length) chrome.storage.local.set(u.set).then(() => chrome.storage.local.remove(u.remove));
      state.scopes = Array.isArray(m.scopes) ? m.scopes : null;
      // An older daemon lists no capabilities: one frame per event then.
      daemonCaps = { batched: Array.isArray(m.capabilities) && m.capabilities.includes(CAP_STREAM_EVENTS), maxBytes: m.max_message_bytes || 0 };
      state.connected = true; state.lastError = ''; state.connectedAt = Date.now();
      clearInterval(keepaliveTimer);
      keepaliveTimer = setInterval(() => send({ type: 'keepalive', ts: Date.now() }), Math.min(m.keepalive_ms || 20000, 20000));
      publish();
      outbox.flush().catch(() => {});
      reportAll();
      refreshAccounts();
      return;
    }
    case 'error':
      // A pairing refusal (ref_type hello) precedes the close 4401.
      if (m.ref_type === 'hello') pairingError = { code: m.code || '', message: m.message || '' };
      return;
    case 'state_snapshot':
      state.snapshot = m; publish(); overlayAll(); return;
    case 'keepalive': return;
    case 'api_request': return relay(m);
    case 'request_cancel': cancelRelay(m.requestId); return;
    case 'action': return action(m);
    case 'conversation_inject': return inject(m);
    default: return;
  }
}

// ---- tabs and capture ----

// allTabs is chrome.tabs.query({}) kept until a tab changes (every relay
// picks its tab: one query per request cost a browser round trip).
let tabsCache = null;
function allTabs() {
  if (!tabsCache) { const q = chrome.tabs.query({}); tabsCache = q; q.catch(() => { if (tabsCache === q) tabsCache = null; }); }
  return tabsCache;
}
for (const ev of [chrome.tabs.onCreated, chrome.tabs.onUpdated, chrome.tabs.onRemoved, chrome.tabs.onReplaced, chrome.tabs.onMoved, chrome.tabs.onAttached, chrome.tabs.onDetached]) {
  ev.addListener(() => { tabsCache = null; });
}

// platformTabs: the tabs of a platform, kept for the same tab list and
// adapters (every relay picks its tab here; naming each tab's platform
// parses its URL). Callers do not change the list.
// Only the tabs of granted origins: the extension may not touch the others.
let platformTabsFor = { tabs: null, ads: null, plan: null, list: null };
async function platformTabs() {
  const ads = await adapters();
  const plan = await grants();
  const tabs = await allTabs();
  const c = platformTabsFor;
  if (c.tabs === tabs && c.ads === ads && c.plan === plan) return c.list;
  const ok = new Set(plan.granted.map((g) => g.platform));
  const list = tabs.flatMap((t) => { const platform = t.url ? platformForURL(ads, t.url) : ''; return platform && ok.has(platform) ? [{ tab: t, platform }] : []; });
  platformTabsFor = { tabs, ads, plan, list };
  return list;
}

async function tabFor(platform) {
  const ts = (await platformTabs()).filter((x) => x.platform === platform);
  return ts.length ? ts[0].tab : null;
}

const captured = {}; // platform -> {headers, cookies, host, tabId, endpoints}; values stay in memory only

// What the capture listener was called for, by origin (counts only, no URL
// path, no header): the e2e reads it to show a page outside the granted
// origins costs no webRequest callback (globalThis: DevTools evaluates
// there, module variables are out of its reach).
const webRequestSeen = new Map();
globalThis.svcdWebRequestSeen = webRequestSeen;

// What the page-side capture reported, by the page's origin (counts of
// messages only): the e2e reads it to show a page outside the granted
// origins sends the worker nothing, and that a page repeating one request
// reports it once (globalThis, as svcdWebRequestSeen).
const pageCaptureSeen = new Map();
globalThis.svcdPageCaptureSeen = pageCaptureSeen;

// captureOf is what the worker holds of a platform's login (values in
// memory only), made at its first capture.
function captureOf(platform, host, tabId) {
  const c = captured[platform] || (captured[platform] = { headers: {}, cookies: {}, endpoints: {}, host, tabId });
  c.tabId = tabId;
  return c;
}

// addEndpoint records one /api/ endpoint of a platform; whether it is new.
function addEndpoint(c, method, path) {
  const p = cutQuery(path);
  if (!p.startsWith('/api/')) return false;
  const key = method + ' ' + p;
  if (c.endpoints[key]) return false;
  c.endpoints[key] = { method, path: p };
  return true;
}

// onPageCapture takes a page relay's report of the page's own requests
// (page-relay.js watchPageRequests, through the content script): the
// default header capture (issue 36). Only from a tab of a granted platform
// origin, and only what lib/pagecapture.js acceptReport lets through.
async function onPageCapture(raw, tab) {
  let origin;
  try { origin = new URL(tab.url).origin; } catch { return; }
  pageCaptureSeen.set(origin, (pageCaptureSeen.get(origin) || 0) + 1);
  if (pageCaptureSeen.size > 64) pageCaptureSeen.delete(pageCaptureSeen.keys().next().value);
  const r = acceptReport(raw);
  if (!r) return;
  const platform = platformForOrigin(await adapters(), origin);
  if (!platform || !(await grants()).granted.some((g) => g.platform === platform)) return;
  const c = captureOf(platform, new URL(origin).hostname, tab.id);
  let changed = mergeHeaders(c.headers, r.headers);
  for (const e of r.endpoints) changed = addEndpoint(c, e.method, e.path) || changed;
  if (changed) report(platform);
}

// onRequestHeaders is the network-level header capture, opt-in (the
// optional webRequest permission, options page): it also sees the headers
// the browser adds. It is added with a filter of the granted platform
// origins only (registerForGrants), and only while webRequest is held:
// Chromium slows every page's requests while any extension holds it.
async function onRequestHeaders(d) {
  try { const o = new URL(d.url).origin; webRequestSeen.set(o, (webRequestSeen.get(o) || 0) + 1); } catch { /* counted nowhere */ }
  if (webRequestSeen.size > 64) webRequestSeen.delete(webRequestSeen.keys().next().value);
  if (d.tabId < 0) return;
  const ads = await adapters();
  let u;
  try { u = new URL(d.url); } catch { return; }
  const platform = platformForOrigin(ads, u.origin);
  if (!platform) return;
  const c = captureOf(platform, u.hostname, d.tabId);
  // Every header name of the tab's requests; values of credential headers
  // only, and those only inside the credentials message (lib/fingerprint.js).
  let changed = mergeHeaders(c.headers, d.requestHeaders);
  changed = addEndpoint(c, d.method, u.pathname) || changed;
  if (changed) report(platform);
}

async function report(platform) {
  const c = captured[platform];
  if (!c) return;
  const ads = await adapters();
  const ad = ads.find((a) => a.platform === platform);
  const cookies = {};
  for (const k of await chrome.cookies.getAll({ url: ad.origin })) cookies[k.name] = k.value;
  c.cookies = cookies;
  if (Object.keys(c.headers).length + Object.keys(cookies).length > 0) {
    send({ type: 'credentials', platform, host: c.host, tabId: c.tabId, headers: c.headers, cookies });
  }
  const eps = Object.values(c.endpoints);
  if (eps.length) send({ type: 'api_endpoints', platform, host: c.host, endpoints: eps });
  // What the popup may show: names and the fingerprint, never a value.
  state.captured[platform] = { header_names: headerNames(c.headers), credential_names: headerNames(Object.fromEntries(Object.entries(c.headers).filter(([, v]) => v !== ''))), cookie_count: Object.keys(cookies).length, fingerprint: await fingerprint(c.headers, cookies), endpoints: eps.length };
  publish();
  refreshAccounts();
}

// refreshAccounts reads this client's records from the daemon's read model
// (GET /v1/browser): the captured accounts per platform as the daemon keeps
// them (account label, status, counts, fingerprint), for the popup. The
// daemon answers names and fingerprints only, never a value.
let accountsTimer = null;
function refreshAccounts() {
  clearTimeout(accountsTimer);
  accountsTimer = setTimeout(async () => {
    try {
      const s = await settings();
      const u = new URL(s.daemon.replace(/^ws/, 'http'));
      u.pathname = '/v1/browser';
      u.search = '?client_id=' + encodeURIComponent(s.clientId);
      // GET /v1/browser needs no token; the bridge credential is never
      // sent over HTTP (no route accepts it).
      // The read model is paged: follow next_cursor for every record.
      const records = [];
      for (let pages = 0; pages < 1000; pages++) {
        const r = await fetch(u);
        if (!r.ok) return;
        const env = await r.json();
        records.push(...((env.data && env.data.records) || []));
        const next = env.data && env.data.next_cursor;
        if (!next) break;
        u.search = '?client_id=' + encodeURIComponent(s.clientId) + '&cursor=' + encodeURIComponent(next);
      }
      const accounts = {};
      for (const rec of records) {
        // A live client with nothing captured has a record without a
        // platform: it is no platform row (the popup's empty row).
        if (!rec.platform) continue;
        (accounts[rec.platform] || (accounts[rec.platform] = [])).push({
          account: rec.account || '', status: rec.status || '', header_count: rec.header_count || 0,
          cookie_count: rec.cookie_count || 0, fingerprint: rec.credential_fingerprint || '',
        });
      }
      state.accounts = accounts;
      publish();
    } catch { /* the daemon is away: the popup keeps the last list */ }
  }, 300);
}

function reportAll() { for (const p of Object.keys(captured)) report(p); }

// ---- relay: fetch inside the platform page (content script, page origin) ----

async function ensureContent(tabId) {
  await chrome.scripting.executeScript({ target: { tabId }, files: ['lib/pagerules.js', 'content.js'] });
}

async function relay(m) {
  const sse = m.responseMode === 'sse';
  let seq = 0;
  let buffered = '';
  let head = null;
  let done = false;
  let finish = () => {};
  // The events one piece of the answer held go out together (lib/batch.js).
  let evs = [];
  const parse = sseParser((e) => evs.push({ seq: ++seq, event: e.event, data: e.data }));
  const parseAndSend = (text) => {
    parse(text);
    if (!evs.length) return;
    const out = evs;
    evs = [];
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    for (const f of streamFrames(m.requestId, out, daemonCaps)) ws.send(f);
  };
  // handle takes the head, chunks and end of the fetch, wherever it ran;
  // one message may carry all three (a buffered answer from the page).
  const handle = (r) => {
    if (done) return;
    if (r.head) {
      head = r;
      if (sse) send({ type: 'stream_open', requestId: m.requestId, status: r.status, headers: r.headers });
    }
    if (r.chunk !== undefined) {
      if (sse) parseAndSend(r.chunk); else buffered += r.chunk;
    }
    if (r.end) {
      done = true;
      if (sse) { parseAndSend('\n\n'); send({ type: 'stream_end', requestId: m.requestId }); }
      else send({ type: 'api_response', requestId: m.requestId, status: head.status, headers: head.headers, body: buffered });
      finish();
    } else if (r.error) {
      done = true;
      if (sse && head) send({ type: 'stream_error', requestId: m.requestId, code: r.aborted ? 'cancelled' : 'network', message: r.aborted ? 'cancelled' : 'the page could not complete the request' });
      else send({ type: 'api_response', requestId: m.requestId, status: 0, error: r.aborted ? 'cancelled' : r.stale ? 'the page holds an older version of the extension\'s script: reload the page' : 'the page could not perform the request' });
      finish();
    }
  };
  const body = m.body === undefined || m.body === null ? undefined : (typeof m.body === 'string' ? m.body : JSON.stringify(m.body));
  const headers = { ...(m.headers || {}) };
  if (body !== undefined && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
  const ad = (await adapters()).find((a) => a.platform === m.platform);
  if (!ad) { send({ type: 'api_response', requestId: m.requestId, status: 0, error: 'no adapter for this platform' }); return; }
  // An origin the user has not granted: neither the page nor the worker's
  // fetch may reach it; say so at once instead of a script error later.
  if (!(await grants()).granted.some((g) => g.platform === m.platform)) {
    send({ type: 'api_response', requestId: m.requestId, status: 0, error: 'origin_not_granted: grant this platform\'s origin in the extension\'s options page' });
    return;
  }
  const path = m.path || ad.completionPath || '/api/complete';
  const req = { method: m.method || (body ? 'POST' : 'GET'), path, headers, body: m.path ? body : JSON.stringify({ prompt: m.prompt }), timeoutMs: m.timeoutMs || 120000, stream: sse };
  const tab = await tabFor(m.platform);
  if (!tab) {
    // No page open: fetch from the worker (host permission; the browser's
    // cookies for the origin still apply, the page's own state does not).
    if (earlyCancels.delete(m.requestId)) { handle({ error: true, aborted: true }); return; }
    const ctl = new AbortController();
    relays.set(m.requestId, { cancel: () => ctl.abort() });
    finish = () => relays.delete(m.requestId);
    const timer = setTimeout(() => ctl.abort(), req.timeoutMs);
    try {
      const r = await fetch(new URL(req.path, ad.origin), { method: req.method, headers: req.headers, body: req.body, credentials: 'include', signal: ctl.signal });
      const hs = {};
      r.headers.forEach((v, k) => { hs[k] = v; });
      handle({ head: true, status: r.status, headers: hs });
      const rd = r.body.getReader();
      const dec = new TextDecoder();
      for (;;) { const { value, done: end } = await rd.read(); if (end) break; handle({ chunk: dec.decode(value, { stream: true }) }); }
      handle({ end: true });
    } catch { handle({ error: true, aborted: ctl.signal.aborted }); } finally { clearTimeout(timer); }
    return;
  }
  // In the page, over the tab's port. The first try takes the page as it
  // is (the registered page relay and the manifest's content script are
  // usually there); a page that has not both (open before the extension,
  // or navigated since) hangs up unheard, and the second try injects them.
  const inPage = async (inject) => {
    let tp;
    try { tp = await tabPort(tab.id, inject); } catch { send({ type: 'api_response', requestId: m.requestId, status: 0, error: 'the page refused the relay script' }); return; }
    // No await from here to relays.set: a cancel lands in one or the other.
    if (earlyCancels.delete(m.requestId)) { handle({ error: true, aborted: true }); return; }
    const n = crypto.randomUUID();
    let heard = false;
    const post = (x) => { try { tp.port.postMessage({ n, req: x }); } catch {} };
    tp.waiting.set(n, {
      onMsg: (r) => { heard = true; handle(r); },
      // The port is gone (the page navigated or closed, or had no relay).
      onGone: () => {
        relays.delete(m.requestId);
        if (!heard && !inject) inPage(true);
        else handle({ error: true });
      },
    });
    relays.set(m.requestId, { cancel: () => post({ cancel: true }) });
    finish = () => { relays.delete(m.requestId); tp.waiting.delete(n); };
    post(req);
  };
  await inPage(false);
}

// tabPorts hold one long-lived port per tab to its content script
// ("svcd-relays"): every relay of the tab goes over it by a nonce, so a
// request costs a message each way, not a connect. The port closes when the
// page goes (navigation, tab closed) or the worker stops; the next relay
// opens a new one. With inject, the content script and the page relay are
// put in place first.
const tabPorts = new Map(); // tabId -> Promise<{ port, waiting: Map<nonce, {onMsg, onGone}> }>
function tabPort(tabId, inject) {
  let p = tabPorts.get(tabId);
  if (p && !inject) return p;
  p = (async () => {
    if (inject) await preparePage(tabId);
    const port = chrome.tabs.connect(tabId, { name: 'svcd-relays' });
    const tp = { port, waiting: new Map() };
    port.onMessage.addListener(({ n, msg }) => { const w = tp.waiting.get(n); if (w) w.onMsg(msg); });
    port.onDisconnect.addListener(() => {
      if (tabPorts.get(tabId) === p) tabPorts.delete(tabId);
      const gone = [...tp.waiting.values()];
      tp.waiting.clear();
      for (const w of gone) w.onGone();
    });
    return tp;
  })();
  tabPorts.set(tabId, p);
  p.catch(() => { if (tabPorts.get(tabId) === p) tabPorts.delete(tabId); });
  return p;
}

async function preparePage(tabId) {
  await ensureContent(tabId);
  await chrome.scripting.executeScript({ target: { tabId }, world: 'MAIN', files: ['lib/pagecapture.js', 'page-relay.js'] });
}

// grants is the plan of the platform origins (lib/grants.js): which the
// user granted, which are missing, and the match patterns of the granted
// ones. Kept until the adapters or the permissions change.
let grantsCache = null;
function grants() {
  if (!grantsCache) {
    grantsCache = (async () => {
      const [ads, perms] = await Promise.all([adapters(), chrome.permissions.getAll()]);
      const plan = grantPlan(ads, perms.origins || []);
      // Network capture: only while the optional webRequest is held.
      plan.network = (perms.permissions || []).includes('webRequest');
      chrome.storage.session.set({ grants: { granted: plan.granted, missing: plan.missing } }).catch(() => {});
      return plan;
    })().catch((e) => { grantsCache = null; throw e; });
  }
  return grantsCache;
}

// registerForGrants puts the content script (isolated world, document_idle),
// the page relay (page-relay.js: MAIN world, document_start, so a page
// opened after it needs no injection at its first relay; it also holds the
// default, page-side header capture) and, only while the optional webRequest
// permission is held, the network header capture (webRequest with
// extraHeaders) in place for the granted platform
// origins exactly, and takes them away from every other page. It runs at
// every worker start (the scripts persist over worker and browser restarts;
// a listener does not), when the origins change and when a grant is added
// or removed. One run at a time: the next waits for the one before.
let registered = Promise.resolve();
let pageRelayFor = null;
let captureFor = null;
let captureOn = null; // chrome.webRequest.onSendHeaders while the listener is on it
function registerForGrants() {
  registered = registered.then(applyGrants, applyGrants);
  return registered;
}
async function applyGrants() {
  grantsCache = null;
  let plan;
  try { plan = await grants(); } catch (e) { console.warn('svcd: the granted origins could not be read', e && e.message); return; }
  const key = plan.patterns.join(' ');
  const netKey = plan.network ? key : '';
  if (captureFor !== netKey) {
    // The event the listener was added to (chrome.webRequest is gone from
    // the worker once the permission is given back).
    if (captureOn) { try { captureOn.removeListener(onRequestHeaders); } catch { /* gone with the permission */ } captureOn = null; }
    // No granted origin: no listener at all (an empty urls filter would
    // not mean "nothing").
    if (netKey && chrome.webRequest) {
      captureOn = chrome.webRequest.onSendHeaders;
      captureOn.addListener(onRequestHeaders, { urls: plan.patterns }, ['requestHeaders', 'extraHeaders']);
    }
    captureFor = netKey;
  }
  if (pageRelayFor === key) return;
  try {
    const have = (await chrome.scripting.getRegisteredContentScripts()).map((r) => r.id);
    const { gone, update, add } = registrationSteps(have, plan.patterns);
    if (gone.length) await chrome.scripting.unregisterContentScripts({ ids: gone });
    if (update.length) await chrome.scripting.updateContentScripts(update);
    if (add.length) await chrome.scripting.registerContentScripts(add);
    pageRelayFor = key;
    // A granted platform page already open (granted just now, or open since
    // before the install) gets the scripts now: the page-side capture sees
    // its requests from here on, not only after a reload or its first relay.
    for (const { tab } of await platformTabs()) preparePage(tab.id).catch(() => {});
  } catch (e) {
    // Relays still work in granted pages: the scripts are injected at a
    // page's first relay.
    console.warn('svcd: the page scripts could not be registered', e && e.message);
  }
}

// A grant added or given back (options page, chrome://extensions, the
// browser's site access menu) changes what is registered at once.
chrome.permissions.onAdded.addListener(() => { registerForGrants(); });
chrome.permissions.onRemoved.addListener(() => { registerForGrants(); });

// After an update, an origin in use that is no longer granted (Chrome
// keeps an old <all_urls> grant, so normally none): the options page opens
// once and asks again for all of them in one prompt (a prompt needs the
// user's click: a worker cannot show one).
async function askAgainAfterUpdate() {
  // Chrome keeps an old <all_urls> grant over the update (as an optional
  // grant): then every origin in use is still granted and nothing is asked.
  // The worker does not give it back itself: the daemon's loopback address
  // was granted only through it, and a worker cannot ask for it again (the
  // options page offers to narrow it, in one prompt).
  const plan = await grants();
  const { origins } = await settings();
  // The origins in use: those the user configured, and a platform's
  // default one where a tab of it is open (the rest was never used).
  const ads = await adapters();
  const open = new Set((await allTabs()).map((t) => (t.url ? platformForURL(ads, t.url) : '')));
  const configured = plan.missing.filter((r) => origins[r.platform] || open.has(r.platform));
  if (!configured.length) return;
  await chrome.storage.local.set({ regrant: configured.map((r) => r.pattern) });
  await chrome.runtime.openOptionsPage();
}

// After an update from a version that required webRequest, Chrome keeps
// the old grant as the optional permission it now is, and with it the cost
// to every page's requests (docs/extension.md "Header capture"). It is
// given back unless the user switched network capture on in the options
// page (which stores networkCapture: true); a worker may give a permission
// back without a prompt.
async function dropInheritedWebRequest() {
  const { networkCapture } = await chrome.storage.local.get('networkCapture');
  if (networkCapture) return;
  if (await chrome.permissions.contains({ permissions: ['webRequest'] })) await chrome.permissions.remove({ permissions: ['webRequest'] });
}

// ---- management actions ----

async function shellRuntime() {
  const ts = await platformTabs();
  return { tabs: ts.length, platforms: [...new Set(ts.map((x) => x.platform))].sort() };
}

async function action(m) {
  const res = { type: 'action_result', actionId: m.actionId, accepted: true, completed: true, failed: false, reason: '' };
  try {
    const ads = await adapters();
    const ad = ads.find((a) => a.platform === m.platform);
    let tab = m.platform ? await tabFor(m.platform) : null;
    switch (m.action) {
      case 'request_credentials':
        if (m.platform) await report(m.platform); else reportAll();
        res.target = { platform: m.platform || '' };
        break;
      case 'tab_open':
      case 'tab_restore':
        if (!ad) throw new Error('unknown platform');
        if (!tab || m.action === 'tab_open') tab = await chrome.tabs.create({ url: ad.origin + ((m.options && m.options.path) || '/') });
        res.target = { platform: m.platform, tabId: tab.id };
        break;
      case 'tab_focus':
        if (!tab) throw new Error('no open tab for this platform');
        await chrome.tabs.update(tab.id, { active: true });
        res.target = { platform: m.platform, tabId: tab.id };
        break;
      case 'tab_reload':
        if (!tab) throw new Error('no open tab for this platform');
        await chrome.tabs.reload(tab.id);
        res.target = { platform: m.platform, tabId: tab.id };
        break;
      case 'plugin_status':
        res.result = { connected: state.connected, extension_version: VERSION, captured: state.captured };
        break;
      case 'ws_reconnect': {
        const o = m.options || {};
        const disconnectMs = Math.max(0, Math.min(o.disconnectMs ?? 500, 60000));
        const repeat = Math.max(1, Math.min(o.repeatCount ?? 1, 10));
        const interval = Math.max(0, Math.min(o.repeatIntervalMs ?? 1000, 60000));
        res.result = { disconnectMs, repeatCount: repeat, repeatIntervalMs: interval };
        res.shell_runtime = await shellRuntime();
        send(res);
        for (let i = 0; i < repeat; i++) {
          setTimeout(() => { const s = ws; ws = null; if (s) { s.onclose = null; s.close(1000, 'ws_reconnect'); } state.connected = false; outbox.dropped(); scheduleReconnect(disconnectMs); }, i * (interval + disconnectMs));
        }
        return;
      }
      case 'controller_reload':
        res.shell_runtime = await shellRuntime();
        send(res);
        setTimeout(() => chrome.runtime.reload(), 100);
        return;
      default:
        res.accepted = false; res.completed = false; res.failed = true; res.reason = 'unknown action';
    }
  } catch (e) {
    res.completed = false; res.failed = true; res.reason = (e && e.message) || 'failed';
  }
  res.shell_runtime = await shellRuntime();
  send(res);
}

// ---- conversations ----

// The instruction client loop (lib/convloop.js): one guard per conversation,
// kept in chrome.storage.session so a restarted worker keeps its counts.
const convTabs = new Map(); // local_conversation_id -> the tab that holds it
let loopsReady = null;
function loops() {
  if (!loopsReady) {
    loopsReady = (async () => {
      const [{ loops: saved }, s] = await Promise.all([chrome.storage.session.get('loops'), settings()]);
      const save = (st) => { state.loops = st; chrome.storage.session.set({ loops: st }).catch(() => {}); publish(); overlayAll(); };
      const l = new ConversationLoops({ send: post, type: typeInto, save, config: s.loop, delivered }, saved || {});
      state.loops = l.states();
      return l;
    })();
  }
  return loopsReady;
}

// delivered remembers the delivery_keys typed (lib/delivered.js), the last
// 200, in chrome.storage.session (memory, never disk): one daemon that
// redelivers after a crash gets duplicate, and nothing is typed twice.
const delivered = new DeliveredKeys({
  load: async () => (await chrome.storage.session.get('delivered')).delivered || [],
  store: (keys) => chrome.storage.session.set({ delivered: keys }),
});

async function inject(m) {
  return (await loops()).inject(m);
}

// noteTyped remembers what the extension typed into each conversation
// other than reports (which carry the result marker): renewal texts and the
// like, the last 20, in chrome.storage.session (memory, not disk). A page
// loaded later shows them as user messages; its content script asks for
// them (typedIn) and does not take them for the user's.
async function noteTyped(local, text) {
  if (String(text).includes(RESULT_MARKER)) return;
  const { typed = {} } = await chrome.storage.session.get('typed');
  typed[local] = [...(typed[local] || []).filter((t) => t !== text).slice(-19), text];
  await chrome.storage.session.set({ typed });
}

// userIdKey is the random key that names user messages without an id of
// their own (lib/pagerules.js userMessageID). It lives in
// chrome.storage.session (memory, never disk), like the loop guards and their
// remembered ids: the names stay the same over reloads and worker restarts;
// after a browser restart both are new, and a page's user messages are
// reported once more under new names (the daemon only resets its count).
let userIdKeyAsked = null;
function userIdKey() {
  userIdKeyAsked ||= (async () => {
    const { userIdKey: k } = await chrome.storage.session.get('userIdKey');
    if (k) return k;
    const fresh = [...crypto.getRandomValues(new Uint8Array(16))].map((x) => x.toString(16).padStart(2, '0')).join('');
    await chrome.storage.session.set({ userIdKey: fresh });
    return fresh;
  })().catch((e) => { userIdKeyAsked = null; throw e; });
  return userIdKeyAsked;
}

// typeInto types text into the page that holds the conversation (the tab it
// was linked from, else the platform's tab) and sends it.
async function typeInto(ref, text) {
  await noteTyped(ref.local, text).catch(() => {});
  let tab = null;
  const id = convTabs.get(ref.local);
  if (id !== undefined) tab = await chrome.tabs.get(id).catch(() => null);
  if (!tab) tab = await tabFor(ref.platform);
  if (!tab) return { ok: false, code: 'no_tab', reason: 'no open tab for this platform' };
  const ad = (await adapters()).find((a) => a.platform === ref.platform);
  try {
    await ensureContent(tab.id);
    return (await chrome.tabs.sendMessage(tab.id, { inject: true, text, adapter: ad, waitMs: (await loops()).guard(ref).waitMs })) || { ok: false };
  } catch {
    return { ok: false, code: 'inject_failed', reason: 'the page did not take the text' };
  }
}

// onConversation takes what the content script saw in a conversation page.
async function onConversation(c, tab) {
  const platform = platformForURL(await adapters(), tab.url);
  if (!platform) return;
  const ref = { platform, local: c.local, remote: c.remote };
  convTabs.set(c.local, tab.id);
  const l = await loops();
  switch (c.kind) {
    case 'link': post({ type: 'conversation_link', platform, local_conversation_id: c.local, remote_conversation_id: c.remote, url: tab.url, title: tab.title || '' }); return;
    case 'message': l.reply(ref, c); return;
    case 'users': l.userMessages(ref, Array.isArray(c.ids) ? c.ids : []); return;
    case 'typing': l.typing(ref); return;
  }
}

chrome.runtime.onMessage.addListener((msg, sender, reply) => {
  if (msg && msg.pageCapture && sender.tab) {
    onPageCapture(msg.pageCapture, sender.tab).catch(() => console.warn('svcd: a page capture could not be taken'));
    return false;
  }
  if (msg && msg.conversation && sender.tab) {
    onConversation(msg.conversation, sender.tab).catch(() => console.warn('svcd: a conversation report failed'));
    return false;
  }
  if (msg && msg.typedIn && sender.tab) { chrome.storage.session.get('typed').then(({ typed }) => reply((typed || {})[msg.typedIn] || []), () => reply([])); return true; }
  if (msg && msg.userIdKey && sender.tab) { userIdKey().then(reply, () => reply('')); return true; }
  if (msg && msg.adapterFor) { adapters().then((ads) => reply(ads.find((a) => a.platform === platformForURL(ads, msg.adapterFor)) || null)); return true; }
  if (msg && msg.status) { reply(statusView()); return false; }
  // The options page, shown again: a grant changed in Chrome's own site
  // access controls (chrome://extensions) fires no permissions event.
  if (msg && msg.grantsChanged && !sender.tab) { registerForGrants().then(() => reply(true), () => reply(false)); return true; }
  if (msg && msg.reconnect) { attempt = 0; connect(); return false; }
  if (msg && msg.modeAction) { send({ type: 'action_request', requestId: 'r-' + Date.now(), action: msg.modeAction, reason: 'popup' }); return false; }
  return false;
});

async function overlayAll() {
  const convs = (state.snapshot && state.snapshot.browser && state.snapshot.browser.automation_conversations) || [];
  for (const { tab, platform } of await platformTabs()) {
    // A conversation shows in the tab that holds it (any tab of its
    // platform while the extension does not know which one).
    const here = (id, p) => p === platform && (convTabs.get(id) ?? tab.id) === tab.id;
    const mine = convs.filter((c) => here(c.local_conversation_id, c.platform));
    const loopsHere = Object.entries(state.loops || {}).filter(([id, l]) => here(id, l.platform))
      .map(([id, l]) => ({ local_conversation_id: id, rounds: l.rounds, maxRounds: l.maxRounds, stopped: l.stopped }));
    const mode = state.snapshot && state.snapshot.system && state.snapshot.system.mode;
    try { await ensureContent(tab.id); await chrome.tabs.sendMessage(tab.id, { overlay: true, mode, conversations: mine, loops: loopsHere }); } catch {}
  }
}

// Connect when the settings change, at install/startup, and at every worker load.
// New loop limits (options page or config) apply from the next decision;
// the counts so far stay (chrome.storage.session).
chrome.storage.onChanged.addListener((ch, area) => { if (area === 'local' && ch.loop) loopsReady = null; });
// Reconnect when the user typed something new; not when the worker itself
// swapped a used code for its credential or dropped a refused one.
chrome.storage.onChanged.addListener((ch, area) => { if (area === 'local' && ((ch.token && ch.token.newValue) || (ch.pairingCode && ch.pairingCode.newValue) || ch.daemonURL || ch.origins)) { adaptersCache = null; grantsCache = null; if (ch.origins) registerForGrants(); attempt = 0; if (ws) { const s = ws; ws = null; s.onclose = null; s.close(); state.connected = false; outbox.dropped(); } connect(); } });
chrome.alarms.create('svcd-watchdog', { periodInMinutes: 0.5 });
chrome.alarms.onAlarm.addListener(() => { if (!ws) connect(); });
chrome.runtime.onStartup.addListener(connect);
chrome.runtime.onInstalled.addListener((d) => {
  connect();
  if (d && d.reason === 'update') registerForGrants().then(dropInheritedWebRequest).then(askAgainAfterUpdate).catch(() => {});
});
// A restarted worker keeps what the popup shows (names and fingerprints only;
// the captured values lived in the old worker's memory and are gone).
chrome.storage.session.get('status').then(({ status }) => { if (status && status.captured) state.captured = { ...status.captured, ...state.captured }; }).catch(() => {}).finally(() => { connect(); loops(); outbox.flush().catch(() => {}); registerForGrants(); });
