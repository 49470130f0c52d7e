// The daemon's credential fingerprint (docs/bridge-protocol.md "The
// fingerprint, exactly"), computed locally so the popup can show the same
// value the daemon stores without ever displaying a captured value.
const enc = new TextEncoder();

function frame(tag, s) {
  const b = enc.encode(s);
  const out = new Uint8Array(4 + b.length);
  new DataView(out.buffer).setUint32(0, b.length);
  out.set(b, 4);
  return [enc.encode(tag), out];
}

export function fingerprintInput(headers = {}, cookies = {}) {
  const parts = [];
  const hs = Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)]);
  hs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (const [k, v] of hs) { parts.push(enc.encode('h'), ...frame('', k).slice(1), ...frame('', v).slice(1)); }
  const cs = Object.entries(cookies).map(([k, v]) => [k, String(v)]);
  cs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (const [k, v] of cs) { parts.push(enc.encode('c'), ...frame('', k).slice(1), ...frame('', v).slice(1)); }
  const n = parts.reduce((s, p) => s + p.length, 0);
  const all = new Uint8Array(n);
  let o = 0;
  for (const p of parts) { all.set(p, o); o += p.length; }
  return all;
}

export async function fingerprint(headers, cookies) {
  const d = await crypto.subtle.digest('SHA-256', fingerprintInput(headers, cookies));
  return 'sha256:' + [...new Uint8Array(d)].map((x) => x.toString(16).padStart(2, '0')).join('');
}

// headerNames is what may be displayed: lower-cased, sorted names only.
export function headerNames(headers = {}) {
  return Object.keys(headers).map((k) => k.toLowerCase()).sort();
}
