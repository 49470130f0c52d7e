import { test } from "node:test";
import assert from "node:assert/strict";
import { helloAuth, saveFromOptions, afterHelloOk, afterRefusal, pairingSummary } from "../lib/pairing.js";

// A tiny model of chrome.storage.local to apply the decisions to.
function apply(store, { set = {}, remove = [] }) {
  for (const k of remove) delete store[k];
  Object.assign(store, set);
  return store;
}

test("a typed code is sent once, then the credential replaces it", () => {
  const store = { token: "old-shared-token" };
  apply(store, saveFromOptions({ code: " k7qm-2xrt " }));
  assert.deepEqual(store, { pairingCode: "k7qm-2xrt" });
  assert.deepEqual(helloAuth(store), { code: "k7qm-2xrt" });
  apply(store, afterHelloOk({ type: "hello_ok", credential: "svcb_abc" }));
  assert.deepEqual(store, { credential: "svcb_abc" });
  assert.deepEqual(helloAuth(store), { credential: "svcb_abc" });
  // A hello_ok without a credential (a credential hello) changes nothing.
  apply(store, afterHelloOk({ type: "hello_ok" }));
  assert.deepEqual(store, { credential: "svcb_abc" });
});

test("a new code re-pairs over a stored credential; a token drops both", () => {
  const store = { credential: "svcb_abc" };
  apply(store, saveFromOptions({ code: "AAAA-BBBB" }));
  assert.deepEqual(helloAuth(store), { code: "AAAA-BBBB" });
  apply(store, saveFromOptions({ token: "t" }));
  assert.deepEqual(store, { token: "t" });
  assert.deepEqual(helloAuth(store), { token: "t" });
  apply(store, saveFromOptions({}));
  assert.deepEqual(store, { token: "t" });
  assert.equal(helloAuth({}), null);
});

test("refusals name the problem and drop what cannot work again", () => {
  let r = afterRefusal("pairing_code_expired", "pairing code expired");
  assert.match(r.text, /expired/);
  assert.deepEqual(r.remove, ["pairingCode"]);
  r = afterRefusal("pairing_code_invalid");
  assert.match(r.text, /already used/);
  assert.deepEqual(apply({ pairingCode: "x", credential: "c" }, r), { credential: "c" });
  r = afterRefusal("credential_revoked");
  assert.match(r.text, /revoked/);
  assert.deepEqual(r.remove, ["credential"]);
  r = afterRefusal("token_pairing_disabled");
  assert.match(r.text, /svcctl browser pair/);
  assert.deepEqual(r.remove, []);
  assert.match(afterRefusal("", "").text, /options page/);
  assert.equal(afterRefusal("credential_invalid").retry, false);
  // Rate-limited: nothing is dropped and the worker retries; the popup says when.
  r = afterRefusal("pairing_rate_limited", "", 7400);
  assert.equal(r.retry, true);
  assert.deepEqual(r.remove, []);
  assert.match(r.text, /retrying in 7 s/);
  assert.match(afterRefusal("something_new", "the daemon's words").text, /the daemon's words/);
});

test("the options page summary never shows a secret", () => {
  for (const s of [{ credential: "svcb_SECRET" }, { pairingCode: "SECRET" }, { token: "SECRET" }, {}]) {
    assert.doesNotMatch(pairingSummary(s), /SECRET/);
  }
  assert.match(pairingSummary({ credential: "x" }), /paired/);
  assert.match(pairingSummary({}), /not paired/);
});
