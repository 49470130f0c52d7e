import { test } from "node:test";
import assert from "node:assert/strict";
import { credentialFingerprint, headerNames, mergeHeaders } from "../lib/fingerprint.js";

// The expected value was computed by the daemon's own
// bridgeproto.Credentials.Metadata for the same input.
test("fingerprint equals the daemon's formula", async () => {
  const fp = await credentialFingerprint({ Authorization: "Bearer x", "X-Org": "é1" }, { sid: "abc", Sid: "z" });
  assert.equal(fp, "sha256:f829ab0bf59f9d3a5539ad61f0884740bbc1b90dfcb231897104d054bbcab3e8");
});

test("names without a value are not hashed: page-side and network capture agree", async () => {
  const page = await credentialFingerprint({ Authorization: "Bearer x", "X-Org": "é1" }, { sid: "abc", Sid: "z" });
  const network = await credentialFingerprint({ Authorization: "Bearer x", "X-Org": "é1", "user-agent": "", "sec-ch-ua": "", accept: "" }, { sid: "abc", Sid: "z" });
  assert.equal(network, page);
  assert.equal(page, "sha256:f829ab0bf59f9d3a5539ad61f0884740bbc1b90dfcb231897104d054bbcab3e8");
});

test("fingerprint changes with any value and keeps fields apart", async () => {
  const a = await credentialFingerprint({ a: "b" }, {});
  assert.notEqual(a, await credentialFingerprint({ a: "c" }, {}));
  assert.notEqual(await credentialFingerprint({ "a=b": "c" }, {}), await credentialFingerprint({ a: "b=c" }, {}));
  assert.notEqual(await credentialFingerprint({ x: "1" }, {}), await credentialFingerprint({}, { x: "1" }));
  assert.equal(a, await credentialFingerprint({ A: "b" }, {}));
});

test("header names are lower-cased and sorted, values never appear", () => {
  const names = headerNames({ "X-Token": "secret-value", Authorization: "Bearer s3cret" });
  assert.deepEqual(names, ["authorization", "x-token"]);
  assert.ok(!JSON.stringify(names).includes("secret"));
});

test("header capture keeps every name, values of credential headers only", () => {
  const c = {};
  assert.equal(mergeHeaders(c, [{ name: "Authorization", value: "Bearer s3cret" }, { name: "Content-Length", value: "12" }, { name: "Cookie", value: "sid=s3cret" }, { name: "X-Csrf-Token", value: "t" }, { name: "Session-Id", value: "s" }]), true);
  assert.deepEqual(headerNames(c), ["authorization", "content-length", "cookie", "session-id", "x-csrf-token"]);
  assert.equal(c["content-length"], "");
  assert.equal(c.cookie, "");
  assert.equal(c.authorization, "Bearer s3cret");
  assert.equal(c["session-id"], "s");
  // A volatile header's new value changes nothing the daemon hears.
  assert.equal(mergeHeaders(c, [{ name: "content-length", value: "99" }]), false);
  assert.equal(mergeHeaders(c, [{ name: "Accept", value: "*/*" }]), true);
  assert.equal(mergeHeaders(c, [{ name: "authorization", value: "Bearer other" }]), true);
});

test("header capture stops adding names at the daemon's limit", () => {
  const c = {};
  mergeHeaders(c, Array.from({ length: 250 }, (_, i) => ({ name: "h" + i, value: "v" })));
  assert.equal(Object.keys(c).length, 200);
  assert.equal(mergeHeaders(c, [{ name: "x-new", value: "1" }]), false);
  assert.equal(mergeHeaders(c, [{ name: "h1", value: "other" }]), false);
});
