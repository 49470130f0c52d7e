// Which platform a page or request URL belongs to, with the origins the
// options (or config.local.json) override; and the query cut of captured paths.
export function withOrigins(adapters, origins = {}) {
  return adapters.map((a) => (origins[a.platform] ? { ...a, origin: origins[a.platform] } : a));
}

// platformForURL names the adapter whose origin serves url, or ''.
export function platformForURL(adapters, url) {
  let o;
  try { o = new URL(url).origin; } catch { return ''; }
  const a = adapters.find((x) => { try { return new URL(x.origin).origin === o; } catch { return false; } });
  return a ? a.platform : '';
}

// cutQuery drops query and fragment: they may carry tokens (protocol rule).
export function cutQuery(path) {
  return String(path).split(/[?#]/)[0];
}
