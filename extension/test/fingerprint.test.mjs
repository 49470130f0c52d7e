import { test } from "node:test";
import assert from "node:assert/strict";
import { credentialFingerprint, headerNames } from "../lib/fingerprint.js";

// The expected value was computed by the daemon's own
// bridgeproto.Credentials.Metadata for the same input.
test("fingerprint equals the daemon's formula", async () => {
  const fp = await credentialFingerprint({ Authorization: "Bearer x", "X-Org": "é1" }, { sid: "abc", Sid: "z" });
  assert.equal(fp, "sha256:f829ab0bf59f9d3a5539ad61f0884740bbc1b90dfcb231897104d054bbcab3e8");
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
