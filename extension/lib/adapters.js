// Platform adapters are data (adapters/<platform>.json); a fourth platform is
// a file. origins from the options page override an adapter's origin (tests
// and self-hosted mirrors serve a platform elsewhere).
export const PLATFORMS = ['platform_a', 'platform_b', 'platform_c'];

export function withOrigins(adapters, origins = {}) {
  return adapters.map((a) => (origins[a.platform] ? { ...a, origin: origins[a.platform] } : a));
}

// platformForURL names the adapter whose origin serves url, or ''.
export function platformForURL(adapters, url) {
  let o;
  try { o = new URL(url).origin; } catch { return ''; }
  const a = adapters.find((x) => x.origin === o);
  return a ? a.platform : '';
}

// cutQuery drops query and fragment: they may carry tokens (protocol rule).
export function cutQuery(path) {
  return String(path).split(/[?#]/)[0];
}
