import test from "node:test";
import assert from "node:assert/strict";
import { backoffDelay, BACKOFF_MAX_MS } from "../lib/backoff.js";
import { validClientId, helloMessage } from "../lib/protocol.js";

test("backoff grows, stays within [cap/2, cap] and is capped", () => {
  assert.equal(backoffDelay(0, () => 0), 125);
  assert.equal(backoffDelay(0, () => 1), 250);
  assert.equal(backoffDelay(3, () => 1), 2000);
  assert.equal(backoffDelay(50, () => 1), BACKOFF_MAX_MS);
  assert.equal(backoffDelay(50, () => 0), BACKOFF_MAX_MS / 2);
  for (let i = 0; i < 100; i++) {
    const d = backoffDelay(i % 12);
    assert.ok(d >= 125 && d <= BACKOFF_MAX_MS, String(d));
  }
});

test("clientId rule matches the protocol", () => {
  assert.ok(validClientId("ext-abc"));
  for (const bad of ["", "a b", "a/b", "a\x01", "x".repeat(129), null]) assert.ok(!validClientId(bad), String(bad));
});

test("hello carries exactly the protocol fields", () => {
  assert.deepEqual(Object.keys(helloMessage({ token: "t", clientId: "c", version: "1" })).sort(),
    ["browser", "clientId", "extension_version", "token", "type"]);
});
