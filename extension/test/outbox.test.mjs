import { test } from "node:test";
import assert from "node:assert/strict";
import { Outbox, KEPT_TYPES } from "../lib/outbox.js";
import { ConversationLoops } from "../lib/convloop.js";

const msg = (n) => ({ type: "conversation_message", platform: "platform_a", local_conversation_id: "conv-1", remote_conversation_id: "1", message_id: "m" + n, text: "secret text " + n, role: "assistant" });

// worker is one service worker life: its outbox over a session store that
// outlives it (chrome.storage.session), a socket that is up or down, what
// went on the wire, the warnings and the pending counts the popup heard.
function worker(session, { up = false } = {}) {
  const w = { up, wire: [], warnings: [], counts: [] };
  w.outbox = new Outbox({
    load: async () => structuredClone(session.outbox),
    store: async (entries) => { session.outbox = structuredClone(entries); },
    trySend: (m) => { if (!w.up) return false; w.wire.push(m); return true; },
    onChange: (n) => w.counts.push(n),
    warn: (t) => w.warnings.push(t),
  });
  return w;
}

test("reports made while the socket is down go out in order after the next hello", async () => {
  const session = {};
  const w = worker(session);
  for (let i = 1; i <= 3; i++) assert.equal(await w.outbox.post(msg(i)), false);
  assert.deepEqual(w.wire, []);
  assert.equal(w.outbox.pending, 3);
  assert.equal(session.outbox.length, 3);
  w.up = true;
  assert.equal(await w.outbox.flush(), 3);
  assert.deepEqual(w.wire.map((m) => m.message_id), ["m1", "m2", "m3"]);
  assert.equal(w.outbox.pending, 0);
  assert.deepEqual(session.outbox, []);
  assert.deepEqual(w.counts, [1, 2, 3, 0]);
  // While up and with nothing waiting, a report goes out at once.
  assert.equal(await w.outbox.post(msg(4)), true);
  assert.equal(w.wire.at(-1).message_id, "m4");
});

test("a report posted while others wait goes behind them, even when the socket is up", async () => {
  const w = worker({});
  await w.outbox.post(msg(1));
  w.up = true;
  await w.outbox.post(msg(2));
  assert.deepEqual(w.wire.map((m) => m.message_id), ["m1", "m2"]);
});

test("nothing is taken as sent when the send failed", async () => {
  const session = {};
  let calls = 0;
  const failing = new Outbox({
    load: async () => session.outbox,
    store: async (e) => { session.outbox = structuredClone(e); },
    trySend: () => { calls++; throw new Error("InvalidStateError"); },
    warn: () => {},
  });
  assert.equal(await failing.post(msg(1)), false);
  assert.equal(await failing.flush(), 0);
  assert.ok(calls >= 2);
  assert.equal(failing.pending, 1);
  assert.deepEqual(session.outbox.map((m) => m.message_id), ["m1"]);
  // A flush stops at the first report that cannot go: the rest keep their order.
  const w = worker(session);
  await w.outbox.post(msg(2));
  let n = 0;
  w.up = true;
  w.outbox.trySend = (m) => { if (++n > 1) return false; w.wire.push(m); return true; };
  assert.equal(await w.outbox.flush(), 1);
  assert.deepEqual(w.wire.map((m) => m.message_id), ["m1"]);
  assert.deepEqual(session.outbox.map((m) => m.message_id), ["m2"]);
});

test("a report written just before the socket dropped is sent again; one the daemon answered after is not", async () => {
  const session = {};
  const w = worker(session, { up: true });
  await w.outbox.post(msg(1));
  await w.outbox.heard(); // a daemon frame after m1: m1 was read
  await w.outbox.post(msg(2));
  assert.equal(w.outbox.pending, 0);
  // The daemon dies before reading m2; the socket drops.
  w.up = false;
  await w.outbox.dropped();
  await w.outbox.post(msg(3));
  assert.equal(w.outbox.pending, 2);
  assert.deepEqual(session.outbox.map((m) => m.message_id), ["m2", "m3"]);
  w.up = true;
  await w.outbox.flush();
  assert.deepEqual(w.wire.map((m) => m.message_id), ["m1", "m2", "m2", "m3"]);
  // A frame confirms what was written before it arrived, not what is
  // written after: m4 is posted, the frame arrives before m4's turn came.
  const posted = w.outbox.post(msg(4));
  await w.outbox.heard();
  await posted;
  w.up = false;
  await w.outbox.dropped();
  assert.deepEqual(session.outbox.map((m) => m.message_id), ["m4"]);
});

test("the outbox survives a worker restart, and reports posted before its load go behind the saved ones", async () => {
  const session = {};
  const first = worker(session);
  await first.outbox.post(msg(1));
  await first.outbox.post(msg(2));
  // The worker stops; a new one starts over the same session storage and
  // posts before anything read the saved entries.
  const second = worker(session);
  const posted = second.outbox.post(msg(3));
  assert.equal(second.outbox.pending, 0);
  await posted;
  assert.equal(second.outbox.pending, 3);
  second.up = true;
  await second.outbox.flush();
  assert.deepEqual(second.wire.map((m) => m.message_id), ["m1", "m2", "m3"]);
  assert.deepEqual(session.outbox, []);
});

test("the outbox is bounded: the oldest report goes, with a warning that names no content", async () => {
  const w = worker({});
  for (let i = 1; i <= 103; i++) await w.outbox.post(msg(i));
  assert.equal(w.outbox.pending, 100);
  assert.equal(w.warnings.length, 3);
  for (const t of w.warnings) assert.ok(!t.includes("secret") && !t.includes("conv-1") && !t.includes("m1"), t);
  w.up = true;
  await w.outbox.flush();
  assert.equal(w.wire[0].message_id, "m4");
  assert.equal(w.wire.at(-1).message_id, "m103");
  // A byte bound too: session storage has a quota.
  const small = new Outbox({ load: async () => [], store: async () => {}, trySend: () => false, warn: () => {}, maxBytes: 600 });
  for (let i = 1; i <= 10; i++) await small.post(msg(i));
  assert.ok(small.pending < 10 && small.pending >= 1);
  // One report the daemon could never take is not kept (it would close the
  // connection after every reconnect).
  const huge = worker({});
  assert.equal(await huge.outbox.post({ ...msg(1), text: "x".repeat(3 << 20) }), false);
  assert.equal(huge.outbox.pending, 0);
  assert.equal(huge.warnings.length, 1);
  assert.ok(!huge.warnings[0].includes("xxx"));
});

test("the conversation reports are kept; answers to one connection are not", () => {
  for (const t of ["conversation_link", "conversation_message", "conversation_loop"]) assert.ok(KEPT_TYPES.has(t), t);
  for (const t of ["inject_result", "action_result", "credentials", "api_response", "keepalive"]) assert.ok(!KEPT_TYPES.has(t), t);
});

test("a reply decided on while the socket is down is delivered once, and a reload's repeat is not sent again", async () => {
  const w = worker({});
  const post = (m) => (KEPT_TYPES.has(m.type) ? w.outbox.post(m) : undefined);
  const loops = new ConversationLoops({ send: post, type: async () => ({ ok: true }), sleep: async () => {} });
  const ref = { platform: "platform_a", local: "conv-1", remote: "1" };
  const reply = { message_id: "m-down", text: "checking\n```instr\n@svc::status\n```" };
  assert.equal(loops.reply(ref, reply), true);
  assert.equal(loops.reply(ref, reply), false); // the page reloaded meanwhile
  w.up = true;
  await w.outbox.flush();
  const sent = w.wire.filter((m) => m.type === "conversation_message");
  assert.deepEqual(sent.map((m) => m.message_id), ["m-down"]);
  assert.ok(w.wire.some((m) => m.type === "conversation_loop" && m.state === "running" && m.rounds === 1));
});
