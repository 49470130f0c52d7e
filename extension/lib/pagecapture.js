// Page-side header capture (issue 36): what the page relay (page-relay.js,
// MAIN world of granted platform origins) records of the requests the
// page's own scripts make, and what the worker takes of such a record.
//
// Why page-side: Chromium sends every request of every page through the
// browser process while any extension holds the webRequest permission, and
// that cost a page's own same-origin fetch +0.5 ms with no listener at all,
// +1.1-2.1 ms with the capture listener (docs/performance.md E1pagecost).
// Watching fetch and XMLHttpRequest in the platform page itself costs the
// other sites nothing and the platform page a few microseconds per request.
//
// A classic script: the page relay cannot import modules (it runs in the
// page's world), so this file leaves its functions on
// globalThis.__svcdPageCapture, which the relay takes and deletes at once
// (the page's own scripts come after it). The worker and node's test
// runner import it for that side effect (lib/fingerprint.js,
// test/pagecapture.test.mjs).
(() => {
  // The daemon takes at most 200 headers per credentials message and 500
  // endpoints per api_endpoints message; a page past that reports no more
  // new names (the worker caps the same way, lib/fingerprint.js).
  const MAX_NAMES = 200;
  const MAX_ENDPOINTS = 200;
  const MAX_VALUE = 8192;
  const MAX_PATH = 1024;
  const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]{1,128}$/;
  const METHOD = /^[A-Z]{1,16}$/;

  // credentialHeader: whether a request header's value identifies the login.
  // Only these values go (inside the credentials message, which the daemon
  // turns into the fingerprint at once); every other header is captured by
  // name only, so volatile values (content-length, accept…) do not change the
  // fingerprint on every request. Cookies travel as the cookie map instead of
  // the cookie header.
  function credentialHeader(name) {
    const n = name.toLowerCase();
    if (n === 'cookie') return false;
    return n === 'authorization' || n === 'proxy-authorization' || n.startsWith('x-') ||
      /auth|token|session|csrf|xsrf|api-?key|secret|signature/.test(n);
  }

  // headerPairs lists [name, value] of what fetch takes as headers: a
  // Headers object, a list of pairs or a plain object. Anything else: none.
  function headerPairs(h) {
    if (!h || typeof h !== 'object') return [];
    const out = [];
    if (typeof h.forEach === 'function' && typeof h.append === 'function') { h.forEach((v, k) => out.push([k, v])); return out; }
    if (Array.isArray(h)) { for (const p of h) if (p && p.length === 2) out.push([p[0], p[1]]); return out; }
    for (const k of Object.keys(h)) out.push([k, h[k]]);
    return out;
  }

  // fetchHead is what a fetch(input, init) call sends, as far as capture
  // cares: method, URL (resolved against base) and headers. init's headers
  // replace a Request's, as fetch does. It never reads a body. null when
  // the URL does not parse (the page's fetch will reject it itself).
  function fetchHead(input, init, base) {
    const req = input && typeof input === 'object' && typeof input.url === 'string' && typeof input.method === 'string' ? input : null;
    let url;
    try { url = new URL(req ? req.url : String(input), base); } catch { return null; }
    const method = String((init && init.method) || (req && req.method) || 'GET').toUpperCase();
    const headers = headerPairs(init && init.headers !== undefined ? init.headers : req && req.headers);
    return { method, url, headers };
  }

  // Recorder keeps, for one page, what it already reported: every header
  // name, the value of credential headers, every /api/ endpoint. observe
  // answers only what is new (a new name, a changed credential value, a new
  // endpoint), or null: a page that makes the same request 1000 times
  // reports it once. Requests to another origin are not the platform's and
  // are never looked at (their tokens are not the login's).
  class Recorder {
    constructor(origin) {
      this.origin = origin;
      this.values = new Map(); // lower-cased name -> credential value or ''
      this.endpoints = new Set(); // 'METHOD /api/path'
    }

    observe({ method, url, headers }) {
      if (!url || url.origin !== this.origin) return null;
      let outHeaders = null;
      for (const [k, v] of headers) {
        const name = String(k).toLowerCase();
        if (!TOKEN.test(name)) continue;
        const value = credentialHeader(name) ? String(v).slice(0, MAX_VALUE) : '';
        const had = this.values.get(name);
        if (had === value) continue;
        if (had === undefined && this.values.size >= MAX_NAMES) continue;
        this.values.set(name, value);
        (outHeaders ||= []).push({ name, value });
      }
      let outEndpoints = null;
      const path = url.pathname;
      if (path.startsWith('/api/') && path.length <= MAX_PATH && METHOD.test(method)) {
        const key = method + ' ' + path;
        if (!this.endpoints.has(key) && this.endpoints.size < MAX_ENDPOINTS) {
          this.endpoints.add(key);
          outEndpoints = [{ method, path }];
        }
      }
      if (!outHeaders && !outEndpoints) return null;
      return { headers: outHeaders || [], endpoints: outEndpoints || [] };
    }
  }

  // mergeReports folds a newer report into an older one not yet sent (the
  // relay holds them until the content script is there): a header's last
  // value wins, endpoints add up.
  function mergeReports(a, b) {
    if (!a) return b;
    const byName = new Map(a.headers.map((h) => [h.name, h]));
    for (const h of b.headers) byName.set(h.name, h);
    return { headers: [...byName.values()], endpoints: [...a.endpoints, ...b.endpoints] };
  }

  // acceptReport is the worker's check of a report that came from a page
  // (whose scripts could have sent anything on the relay's event): the
  // same shape, bounds and value rule as Recorder, else null. It answers
  // the headers as lib/fingerprint.js mergeHeaders takes them.
  function acceptReport(r) {
    if (!r || typeof r !== 'object' || !Array.isArray(r.headers) || !Array.isArray(r.endpoints)) return null;
    if (r.headers.length > MAX_NAMES || r.endpoints.length > MAX_ENDPOINTS) return null;
    const headers = [];
    for (const h of r.headers) {
      if (!h || typeof h.name !== 'string' || typeof h.value !== 'string' || !TOKEN.test(h.name) || h.value.length > MAX_VALUE) return null;
      headers.push({ name: h.name, value: credentialHeader(h.name) ? h.value : '' });
    }
    const endpoints = [];
    for (const e of r.endpoints) {
      if (!e || typeof e.method !== 'string' || typeof e.path !== 'string' || !METHOD.test(e.method)) return null;
      if (!e.path.startsWith('/api/') || e.path.length > MAX_PATH || /[?#\s]/.test(e.path)) return null;
      endpoints.push({ method: e.method, path: e.path });
    }
    if (!headers.length && !endpoints.length) return null;
    return { headers, endpoints };
  }

  globalThis.__svcdPageCapture = Object.freeze({ credentialHeader, headerPairs, fetchHead, Recorder, mergeReports, acceptReport });
})();
