// Which platform origins the extension may touch (issue 36). The manifest
// asks at install for the daemon's loopback address only; every platform
// origin is an optional host permission the user grants in the options page.
// The content script, the page relay and the header capture are registered
// for the granted platform origins only; these helpers decide which those
// are, from the adapters (with the options' origin overrides) and
// chrome.permissions.getAll().origins. Pure: node --test covers them.

// originPattern is the match pattern of one origin: scheme, host and port
// (a platform served on 127.0.0.1:8443 is not every loopback page), any path.
// '' for what is no http(s) origin.
export function originPattern(origin) {
  let u;
  try { u = new URL(origin); } catch { return ''; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return '';
  return u.protocol + '//' + u.host + '/*';
}

// parsePattern splits a match pattern into scheme, host and port
// ('*' for any port); null when it is none this file understands.
function parsePattern(p) {
  if (p === '<all_urls>') return { scheme: '*', host: '*', port: '*' };
  const m = /^(\*|https?|wss?|file|ftp):\/\/(\*|\*\.[^/:]+|\[[0-9a-fA-F:.]+\]|[^/:*]+)?(?::(\*|\d+))?\/.*$/.exec(String(p));
  if (!m) return null;
  return { scheme: m[1], host: (m[2] || '').toLowerCase(), port: m[3] || '*' };
}

// covers says whether a granted pattern lets the extension act on origin
// (a parsed URL), the way Chrome matches host permissions: '*' scheme is
// http and https, '*.x' is x and its subdomains, no port is any port.
export function covers(granted, origin) {
  const g = parsePattern(granted);
  if (!g) return false;
  let u;
  try { u = new URL(origin); } catch { return false; }
  const scheme = u.protocol.slice(0, -1);
  if (g.scheme === '*' ? !(scheme === 'http' || scheme === 'https') : g.scheme !== scheme) return false;
  const host = u.hostname.toLowerCase();
  if (g.host !== '*') {
    if (g.host.startsWith('*.')) {
      const base = g.host.slice(2);
      if (host !== base && !host.endsWith('.' + base)) return false;
    } else if (g.host !== host) return false;
  }
  if (g.port !== '*') {
    const port = u.port || (scheme === 'https' ? '443' : '80');
    if (g.port !== port) return false;
  }
  return true;
}

// grantPlan sorts the adapters' platform origins into granted and missing,
// and lists the match patterns to register the scripts and the capture for
// (sorted, without duplicates: two platforms on one origin register once).
// An adapter with no usable origin is in neither list.
export function grantPlan(adapters, grantedOrigins = []) {
  const granted = [];
  const missing = [];
  for (const a of adapters) {
    const pattern = originPattern(a.origin);
    if (!pattern) continue;
    const origin = new URL(a.origin).origin;
    const row = { platform: a.platform, origin, pattern };
    (grantedOrigins.some((g) => covers(g, origin)) ? granted : missing).push(row);
  }
  const patterns = [...new Set(granted.map((r) => r.pattern))].sort();
  return { granted, missing, patterns };
}

// releasable lists the patterns to give back when a platform's origin
// changes from old to something else: the old origin's pattern, unless
// another platform still uses it or the manifest asks for it anyway (the
// daemon's loopback address: chrome.permissions.remove refuses those).
export function releasable(oldOrigin, adapters, required = []) {
  const p = originPattern(oldOrigin);
  if (!p) return [];
  if (adapters.some((a) => originPattern(a.origin) === p)) return [];
  const origin = new URL(oldOrigin).origin;
  if (required.some((r) => covers(r, origin))) return [];
  return [p];
}

// originInput reads what the user typed as a platform's (or the daemon's)
// origin: an http(s) URL with no path, query or fragment past '/'. It
// answers { origin, pattern } or { error } (said in the options page; nothing
// is stored or asked for then).
export function originInput(text) {
  const t = String(text || '').trim();
  if (!t) return { error: 'empty: type an origin such as https://chat.example.com' };
  let u;
  try { u = new URL(t); } catch { return { error: 'not a URL: type an origin such as https://chat.example.com' }; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { error: 'only http:// and https:// origins' };
  if (u.username || u.password) return { error: 'no user or password in the origin' };
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) return { error: 'an origin only: scheme://host[:port], no path' };
  return { origin: u.origin, pattern: originPattern(u.origin) };
}

// daemonPattern is the match pattern the worker needs for the daemon's
// HTTP routes (/readyz, /v1/browser) given its WebSocket address, or ''.
export function daemonPattern(wsURL) {
  let u;
  try { u = new URL(String(wsURL || '')); } catch { return ''; }
  const scheme = u.protocol === 'wss:' ? 'https:' : u.protocol === 'ws:' ? 'http:' : '';
  if (!scheme) return '';
  return originPattern(scheme + '//' + u.host);
}

// broadGrants lists the granted patterns that reach every site (an update
// from the version that asked for <all_urls> may keep it as an optional
// grant): the worker gives them back and asks again for the origins in use.
export function broadGrants(grantedOrigins = []) {
  return grantedOrigins.filter((p) => {
    if (p === '<all_urls>') return true;
    const m = /^([^:]+):\/\/([^/]*)\//.exec(String(p));
    return !!m && (m[2] === '*' || m[2].startsWith('*:'));
  });
}

// pageScripts are the two scripts registered for the granted origins: the
// content script (isolated world, document_idle) and the page relay (MAIN
// world, document_start, so a page opened after it needs no injection at its
// first relay). Both persist over worker and browser restarts.
export function pageScripts(patterns) {
  return [
    { id: 'svcd-content', matches: patterns, js: ['lib/pagerules.js', 'content.js'], runAt: 'document_idle', allFrames: false, persistAcrossSessions: true },
    { id: 'svcd-page-relay', matches: patterns, js: ['lib/pagecapture.js', 'page-relay.js'], world: 'MAIN', runAt: 'document_start', allFrames: false, persistAcrossSessions: true },
  ];
}

// registrationSteps turns the ids registered now and the granted patterns
// into the chrome.scripting calls to make: which ids to unregister (every
// one when nothing is granted: an empty matches list is refused), which
// scripts to update and which to register.
export function registrationSteps(haveIds, patterns) {
  const want = patterns.length ? pageScripts(patterns) : [];
  const have = new Set(haveIds);
  return {
    gone: [...have].filter((id) => !want.some((x) => x.id === id)),
    update: want.filter((x) => have.has(x.id)),
    add: want.filter((x) => !have.has(x.id)),
  };
}
