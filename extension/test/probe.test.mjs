// node --test extension/test/ : the reconnect wake-up (lib/probe.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReadyProbe, readyzURL } from '../lib/probe.js';

// A probe on a fake clock: timers run when the test says so.
function rig(answers, { wanted = () => true } = {}) {
  const timers = [];
  let t = 0;
  let backs = 0;
  const checks = [];
  const p = new ReadyProbe({
    check: async () => { checks.push(t); const a = answers.shift(); if (a instanceof Error) throw a; return a; },
    wanted: () => wanted(),
    onBack: () => { backs++; },
    random: () => 0.5,
    now: () => t,
    // As a browser's setTimeout: called as a method of another object it
    // throws (the probe once did that, and never ran in Chromium).
    setTimer: function (fn, ms) {
      if (this !== undefined && this !== globalThis) throw new TypeError('Illegal invocation');
      timers.push({ fn, at: t + ms });
      return timers.length;
    },
    clearTimer: (id) => { timers[id - 1] = null; },
  });
  const step = async () => {
    const i = timers.findIndex((x) => x);
    if (i < 0) return false;
    const x = timers[i];
    timers[i] = null;
    t = x.at;
    await x.fn();
    return true;
  };
  return { p, step, checks, backs: () => backs, delays: () => timers.filter(Boolean).map((x) => x.at - t) };
}

test('the daemon seen down then ready connects at once, once', async () => {
  const r = rig([new Error('refused'), false, true, true]);
  r.p.start();
  assert.deepEqual(r.delays(), [75]); // 50-100 ms, jittered
  await r.step(); // refused
  await r.step(); // 503: not ready
  assert.equal(r.backs(), 0);
  await r.step(); // 200
  assert.equal(r.backs(), 1);
  assert.equal(r.p.running, false);
  assert.equal(await r.step(), false, 'nothing more scheduled');
});

test('a daemon up all along gets no attempt from the probe, and is asked slowly', async () => {
  const r = rig([true, true, true]);
  r.p.start();
  await r.step();
  await r.step();
  assert.equal(r.backs(), 0);
  assert.deepEqual(r.delays(), [1500]); // 1-2 s
});

test('after 20 s of a drop the probe slows to 1-2 s', async () => {
  const answers = Array(400).fill(false);
  const r = rig(answers);
  r.p.start();
  while (r.checks.length < 300) await r.step();
  const last = r.checks.slice(-2);
  assert.equal(last[1] - last[0], 1500);
  assert.ok(r.checks.filter((at) => at < 20000).length <= 20000 / 50);
});

test('a start inside a round keeps its state; stop ends it; a socket connecting pauses it', async () => {
  const r = rig([false, true]);
  r.p.start();
  await r.step();
  r.p.start(); // a failed attempt inside the round
  await r.step();
  assert.equal(r.backs(), 1, 'the daemon seen down before the second start still counts');
  r.p.start();
  r.p.stop();
  assert.equal(await r.step(), false);
  let want = true;
  const w = rig([false, true, true], { wanted: () => want });
  w.p.start();
  await w.step(); // down
  want = false; // the backoff's attempt is connecting: no check, no wake-up
  await w.step();
  assert.equal(w.backs(), 0);
  assert.equal(w.checks.length, 1);
  assert.equal(w.p.running, true);
  want = true; // that attempt failed (the daemon was not ready yet)
  w.p.start();
  await w.step(); // ready now: seen down earlier in the round, so connect
  assert.equal(w.backs(), 1);
});

test('readyz beside the WebSocket address', () => {
  assert.equal(readyzURL('ws://127.0.0.1:4317/ws/browser'), 'http://127.0.0.1:4317/readyz');
  assert.equal(readyzURL('wss://h.example:9/ws/browser?x=1#f'), 'https://h.example:9/readyz');
});

test('a declined wake-up (a young socket still connecting) is asked again', async () => {
  let n = 0;
  const r = rig([false, true, true]);
  r.p.onBack = () => (++n === 1 ? false : true);
  r.p.start();
  await r.step(); // down
  await r.step(); // up: declined
  assert.equal(r.p.running, true);
  await r.step(); // up: taken
  assert.equal(n, 2);
  assert.equal(r.p.running, false);
});
