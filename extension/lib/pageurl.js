// Which platform a page or request URL belongs to, with the origins the
// options (or config.local.json) override; and the query cut of captured paths.
export function withOrigins(adapters, origins = {}) {
  return adapters.map((a) => (origins[a.platform] ? { ...a, origin: origins[a.platform] } : a));
}

// platformForURL names the adapter whose origin serves url, or ''.
export function platformForURL(adapters, url) {
  let o;
  try { o = new URL(url).origin; } catch { return ''; }
  return platformForOrigin(adapters, o);
}

// platformForOrigin is platformForURL for a URL already parsed.
export function platformForOrigin(adapters, origin) {
  const i = originsOf(adapters).indexOf(origin);
  return i >= 0 ? adapters[i].platform : '';
}

// originsOf parses a list's adapter origins once (null for a bad one): a
// relay and every request a platform tab makes ask which platform a URL is,
// and parsing each adapter's origin at every question was most of the
// service worker's own CPU time in a relay (docs/performance.md "Floors of
// the extension path"). The lists are never changed in place: the worker
// makes a new one when the settings change (withOrigins).
const parsedOrigins = new WeakMap();
function originsOf(adapters) {
  let os = parsedOrigins.get(adapters);
  if (!os) {
    os = adapters.map((x) => { try { return new URL(x.origin).origin; } catch { return null; } });
    parsedOrigins.set(adapters, os);
  }
  return os;
}

// cutQuery drops query and fragment: they may carry tokens (protocol rule).
export function cutQuery(path) {
  return String(path).split(/[?#]/)[0];
}
