import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { backoffDelay, wsReconnectOptions } from "../lib/backoff.js";
import { validateAdapter, adapterFor } from "../lib/adapters.js";
import { LoopGuard, RESULT_MARKER } from "../lib/loop.js";

test("backoff grows, is capped and jittered", () => {
  const lo = backoffDelay(0, { random: () => 0 }), hi = backoffDelay(0, { random: () => 1 });
  assert.equal(lo, 125);
  assert.equal(hi, 250);
  assert.equal(backoffDelay(20, { random: () => 1 }), 15000);
  assert.ok(backoffDelay(3, { random: () => 0.5 }) > backoffDelay(1, { random: () => 0.5 }));
});

test("ws_reconnect aliases", () => {
  assert.deepEqual(wsReconnectOptions({ delay_ms: 300, repeat_count: 2, interval_ms: 50 }), { disconnectMs: 300, repeatCount: 2, repeatIntervalMs: 50 });
  assert.deepEqual(wsReconnectOptions({}), { disconnectMs: 0, repeatCount: 1, repeatIntervalMs: 1000 });
  assert.equal(wsReconnectOptions({ disconnectMs: -1 }).disconnectMs, 0);
});

test("every bundled adapter is valid data", () => {
  const dir = new URL("../adapters/", import.meta.url);
  const index = JSON.parse(readFileSync(new URL("index.json", dir)));
  assert.deepEqual(index.sort(), readdirSync(dir).filter((f) => f !== "index.json").sort());
  const adapters = index.map((f) => JSON.parse(readFileSync(new URL(f, dir))));
  for (const a of adapters) assert.deepEqual(validateAdapter(a), [], a.platform);
  assert.equal(adapterFor(adapters, "https://chat.platform-b.example/c/1").platform, "platform_b");
  assert.equal(adapterFor(adapters, "https://elsewhere.example/"), undefined);
  assert.ok(validateAdapter({ platform: "x", origin: "nope" }).length >= 2);
  assert.deepEqual(validateAdapter({ ...adapters[0], userSelector: "" }), ["userSelector must be a selector when set"]);
});

test("loop rules: rounds, own output, typing, three failures", () => {
  const g = new LoopGuard({ maxRounds: 2 });
  const reply = "```instr\n@svc::status\n```";
  assert.equal(g.shouldRun("no blocks"), false);
  assert.equal(g.shouldRun(RESULT_MARKER + "\n" + reply), false);
  assert.equal(g.shouldRun(reply), true);
  assert.equal(g.shouldRun(reply), true);
  assert.equal(g.shouldRun(reply), false);
  assert.equal(g.stopped, "round limit reached");
  const f = new LoopGuard();
  assert.equal(f.record(false), "");
  assert.equal(f.record(false), "");
  assert.ok(f.record(false).startsWith(RESULT_MARKER));
  assert.equal(f.shouldRun(reply), false);
  const u = new LoopGuard();
  u.userTyped();
  assert.equal(u.shouldRun(reply), false);
});
