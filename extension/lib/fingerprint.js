// credentialFingerprint mirrors shared/bridgeproto (Credentials.Metadata):
// "sha256:" + hex SHA-256 over, for headers (names lower-cased) then cookies,
// each entry in byte order of its name as kind ("h"/"c"), then the name and
// the value each prefixed by its 4-byte big-endian UTF-8 length. A header
// with no value (every header but the credential ones, lib/fingerprint.js
// mergeHeaders) is not hashed: the fingerprint depends on the login only,
// so page-side capture (the headers the page's scripts set) and network
// capture (those and the browser's own) give the same one (issue 36). The popup
// can show it beside the daemon's value to prove both saw the same login
// without either side ever displaying a credential value.
import "./pagecapture.js";

const enc = new TextEncoder();

function compareBytes(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

function lenPrefixed(bytes) {
  const out = new Uint8Array(4 + bytes.length);
  new DataView(out.buffer).setUint32(0, bytes.length);
  out.set(bytes, 4);
  return out;
}

export async function credentialFingerprint(headers = {}, cookies = {}) {
  const parts = [];
  const add = (kind, map, lower) => {
    const vals = new Map();
    for (const [k, v] of Object.entries(map)) vals.set(lower ? k.toLowerCase() : k, String(v));
    const names = [...vals.keys()].map((n) => [n, enc.encode(n)]).sort((a, b) => compareBytes(a[1], b[1]));
    for (const [n, nb] of names) {
      if (kind === "h" && vals.get(n) === "") continue;
      parts.push(enc.encode(kind), lenPrefixed(nb), lenPrefixed(enc.encode(vals.get(n))));
    }
  };
  add("h", headers, true);
  add("c", cookies, false);
  const total = parts.reduce((s, p) => s + p.length, 0);
  const buf = new Uint8Array(total);
  let off = 0;
  for (const p of parts) { buf.set(p, off); off += p.length; }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", buf));
  return "sha256:" + [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// headerNames is what may be shown or logged of captured headers: the
// lower-cased, sorted names, never the values.
export function headerNames(headers = {}) {
  return [...new Set(Object.keys(headers).map((k) => k.toLowerCase()))].sort();
}

// credentialHeader: whether a request header's value identifies the login
// (lib/pagecapture.js holds the rule: the page relay needs it too, and a
// page-world script cannot import a module).
export const credentialHeader = globalThis.__svcdPageCapture.credentialHeader;

// mergeHeaders adds one request's headers to what a platform tab captured:
// every name, the value of credential headers only ("" for the rest). It
// returns whether anything the daemon should hear changed.
// The daemon takes at most 200 headers per credentials message: names past
// that are not added.
export const MAX_HEADERS = 200;

export function mergeHeaders(captured, requestHeaders = []) {
  let changed = false;
  for (const h of requestHeaders) {
    const n = String(h.name).toLowerCase();
    if (!(n in captured) && Object.keys(captured).length >= MAX_HEADERS) continue;
    const v = credentialHeader(n) ? String(h.value ?? "") : "";
    if (captured[n] !== v) {
      captured[n] = v;
      changed = true;
    }
  }
  return changed;
}
