import { test } from "node:test";
import assert from "node:assert/strict";
import "../lib/pagecapture.js";

const { fetchHead, headerPairs, Recorder, mergeReports, acceptReport, credentialHeader } = globalThis.__svcdPageCapture;
const base = "https://chat.example.com/c/1";
const origin = "https://chat.example.com";

test("fetch's three header forms and a Request are read the same", () => {
  const want = [["authorization", "Bearer a"], ["x-csrf-token", "t"]];
  const norm = (l) => l.map(([k, v]) => [k.toLowerCase(), v]).sort();
  assert.deepEqual(norm(headerPairs({ Authorization: "Bearer a", "X-Csrf-Token": "t" })), want);
  assert.deepEqual(norm(headerPairs([["Authorization", "Bearer a"], ["X-Csrf-Token", "t"]])), want);
  assert.deepEqual(norm(headerPairs(new Headers({ Authorization: "Bearer a", "X-Csrf-Token": "t" }))), want);
  // node's Request needs an absolute URL: a page's Request has one too.
  const abs = new Request(base.replace("/c/1", "/api/x?q=secret"), { method: "post", headers: { Authorization: "Bearer a", "X-Csrf-Token": "t" }, body: "{}" });
  const h = fetchHead(abs, undefined, base);
  assert.equal(h.method, "POST");
  assert.equal(h.url.pathname, "/api/x");
  // The body's content-type is one of the Request's headers.
  assert.deepEqual(norm(h.headers), [...want, ["content-type", "text/plain;charset=UTF-8"]].sort());
  assert.equal(abs.bodyUsed, false, "capture never reads a body");
  // init.headers replace the Request's, as fetch does.
  assert.deepEqual(norm(fetchHead(abs, { headers: { "X-Other": "o" } }, base).headers), [["x-other", "o"]]);
  assert.equal(fetchHead("http://[bad", {}, base), null);
});

test("the same request a thousand times is reported once", () => {
  const r = new Recorder(origin);
  const head = () => fetchHead("/api/complete?x=1", { method: "POST", headers: { Authorization: "Bearer s3cret", "Content-Type": "application/json", "X-Csrf-Token": "t1" } }, base);
  const first = r.observe(head());
  assert.deepEqual(first, {
    headers: [{ name: "authorization", value: "Bearer s3cret" }, { name: "content-type", value: "" }, { name: "x-csrf-token", value: "t1" }],
    endpoints: [{ method: "POST", path: "/api/complete" }],
  });
  let reports = 0;
  for (let i = 0; i < 1000; i++) if (r.observe(head())) reports++;
  assert.equal(reports, 0);
});

test("a changed credential value, a new name or endpoint is reported; a volatile value is not", () => {
  const r = new Recorder(origin);
  r.observe(fetchHead("/api/a", { headers: { Authorization: "Bearer 1", "Content-Type": "a" } }, base));
  assert.deepEqual(r.observe(fetchHead("/api/a", { headers: { Authorization: "Bearer 2" } }, base)), { headers: [{ name: "authorization", value: "Bearer 2" }], endpoints: [] });
  assert.equal(r.observe(fetchHead("/api/a", { headers: { "Content-Type": "b" } }, base)), null);
  assert.deepEqual(r.observe(fetchHead("/api/a", { headers: { Accept: "*/*" } }, base)), { headers: [{ name: "accept", value: "" }], endpoints: [] });
  assert.deepEqual(r.observe(fetchHead("/api/b#frag", {}, base)), { headers: [], endpoints: [{ method: "GET", path: "/api/b" }] });
  // Not an /api/ path, no header: nothing.
  assert.equal(r.observe(fetchHead("/ping", {}, base)), null);
});

test("another origin's requests are never looked at", () => {
  const r = new Recorder(origin);
  assert.equal(r.observe(fetchHead("https://tracker.example.net/api/x", { headers: { Authorization: "Bearer other-site" } }, base)), null);
  assert.equal(r.observe(fetchHead("http://chat.example.com/api/x", { headers: { Authorization: "Bearer x" } }, base)), null);
});

test("names stop at the daemon's limit, malformed names are skipped", () => {
  const r = new Recorder(origin);
  const many = Object.fromEntries(Array.from({ length: 250 }, (_, i) => ["h" + i, "v"]));
  assert.equal(r.observe(fetchHead("/", { headers: many }, base)).headers.length, 200);
  assert.equal(r.observe(fetchHead("/", { headers: { "x-new": "1" } }, base)), null);
  const s = new Recorder(origin);
  assert.equal(s.observe({ method: "GET", url: new URL(base), headers: [["bad name", "v"], ["", "v"]] }), null);
});

test("reports held for the content script fold into one", () => {
  const a = { headers: [{ name: "authorization", value: "1" }], endpoints: [{ method: "GET", path: "/api/a" }] };
  const b = { headers: [{ name: "authorization", value: "2" }, { name: "accept", value: "" }], endpoints: [{ method: "GET", path: "/api/b" }] };
  assert.deepEqual(mergeReports(null, a), a);
  assert.deepEqual(mergeReports(a, b), { headers: [{ name: "authorization", value: "2" }, { name: "accept", value: "" }], endpoints: [{ method: "GET", path: "/api/a" }, { method: "GET", path: "/api/b" }] });
});

test("the worker takes a well-formed report and refuses anything else", () => {
  const ok = { headers: [{ name: "authorization", value: "Bearer x" }, { name: "accept", value: "sneaked-value" }], endpoints: [{ method: "POST", path: "/api/complete" }] };
  // A non-credential header's value is dropped even if a page sent one.
  assert.deepEqual(acceptReport(ok), { headers: [{ name: "authorization", value: "Bearer x" }, { name: "accept", value: "" }], endpoints: [{ method: "POST", path: "/api/complete" }] });
  for (const bad of [null, "x", {}, { headers: [], endpoints: [] }, { headers: [{ name: "A B", value: "" }], endpoints: [] },
    { headers: [{ name: "x", value: 1 }], endpoints: [] }, { headers: [], endpoints: [{ method: "get", path: "/api/x" }] },
    { headers: [], endpoints: [{ method: "GET", path: "/api/x?token=1" }] }, { headers: [], endpoints: [{ method: "GET", path: "/other" }] },
    { headers: Array.from({ length: 201 }, (_, i) => ({ name: "h" + i, value: "" })), endpoints: [] }]) {
    assert.equal(acceptReport(bad), null, JSON.stringify(bad).slice(0, 80));
  }
});

test("credential headers are the fingerprint's", () => {
  for (const n of ["Authorization", "x-csrf-token", "session-id", "X-Api-Key"]) assert.equal(credentialHeader(n), true, n);
  for (const n of ["cookie", "accept", "content-type", "user-agent", "sec-ch-ua"]) assert.equal(credentialHeader(n), false, n);
});
