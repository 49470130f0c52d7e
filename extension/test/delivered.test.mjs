import { test } from "node:test";
import assert from "node:assert/strict";
import { DeliveredKeys, DELIVERED_LIMIT, validKey } from "../lib/delivered.js";
import { ConversationLoops } from "../lib/convloop.js";

// store keeps what DeliveredKeys saves, as chrome.storage.session would.
function store(initial = []) {
  const s = { saved: initial, writes: 0 };
  s.deps = { load: async () => s.saved, store: async (keys) => { s.saved = keys; s.writes++; } };
  return s;
}

test("a key delivered once is answered duplicate, and the store keeps it for a new worker", async () => {
  const s = store();
  let typed = 0;
  const deliver = async () => { typed++; return { ok: true, status: 200 }; };
  const d = new DeliveredKeys(s.deps);
  assert.deepEqual(await d.once("renewal:job-1.x", deliver), { ok: true, status: 200 });
  assert.deepEqual(await d.once("renewal:job-1.x", deliver), { ok: true, duplicate: true });
  assert.equal(typed, 1);
  assert.deepEqual(s.saved, ["renewal:job-1.x"]);
  // A restarted service worker reads the store.
  assert.deepEqual(await new DeliveredKeys(s.deps).once("renewal:job-1.x", deliver), { ok: true, duplicate: true });
  assert.equal(typed, 1);
});

test("a failed delivery is not marked: the redelivery is typed", async () => {
  const s = store();
  const results = [{ ok: false, code: "no_tab" }, { ok: true, status: 200 }];
  let typed = 0;
  const d = new DeliveredKeys(s.deps);
  const deliver = async () => results[typed++];
  assert.equal((await d.once("k1", deliver)).ok, false);
  assert.deepEqual(s.saved, []);
  assert.equal((await d.once("k1", deliver)).duplicate, undefined);
  assert.equal(typed, 2);
  await assert.rejects(d.once("k2", async () => { throw new Error("page gone"); }));
  assert.deepEqual(s.saved, ["k1"]);
});

test("a redelivery while the first attempt is typing waits for it", async () => {
  const d = new DeliveredKeys(store().deps);
  let release;
  let typed = 0;
  const slow = () => new Promise((r) => { typed++; release = () => r({ ok: true, status: 200 }); });
  const first = d.once("k", slow);
  await new Promise((r) => setTimeout(r, 0));
  const second = d.once("k", slow);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(typed, 1);
  release();
  assert.deepEqual(await first, { ok: true, status: 200 });
  assert.deepEqual(await second, { ok: true, duplicate: true });
  assert.equal(typed, 1);
});

test("no key or an invalid one: typed every time, nothing stored", async () => {
  const s = store();
  const d = new DeliveredKeys(s.deps);
  let typed = 0;
  const deliver = async () => { typed++; return { ok: true }; };
  for (const k of [undefined, "", "a b", "x".repeat(129), "k/1", 7]) {
    await d.once(k, deliver);
    await d.once(k, deliver);
  }
  assert.equal(typed, 12);
  assert.equal(s.writes, 0);
  assert.equal(validKey("report:task-3"), true);
});

test("only the last DELIVERED_LIMIT keys are kept", async () => {
  const s = store(["junk key", "old"]);
  const d = new DeliveredKeys(s.deps);
  const deliver = async () => ({ ok: true });
  for (let i = 0; i < DELIVERED_LIMIT + 5; i++) await d.once("k" + i, deliver);
  assert.equal(s.saved.length, DELIVERED_LIMIT);
  assert.equal(s.saved[0], "k5");
  assert.equal(s.saved.includes("junk key"), false);
  assert.equal((await d.once("k4", deliver)).duplicate, undefined);
  assert.equal((await d.once("k" + (DELIVERED_LIMIT + 4), deliver)).duplicate, true);
});

test("ConversationLoops answers a repeated renewal duplicate without typing; a repeat without a key is typed again", async () => {
  const sent = [];
  const typed = [];
  const loops = new ConversationLoops({
    send: (m) => sent.push(m),
    type: async (_r, text) => { typed.push(text); return { ok: true, status: 200 }; },
    sleep: async () => {},
    delivered: new DeliveredKeys(store().deps),
  });
  const renewal = (id, key) => ({ type: "conversation_inject", inject_id: id, platform: "platform_a", local_conversation_id: "conv-1", remote_conversation_id: "1", kind: "renewal", text: "continue", delivery_key: key });
  await loops.inject(renewal("inj_1", "renewal:job-1.x"));
  await loops.inject(renewal("inj_2", "renewal:job-1.x"));
  assert.deepEqual(typed, ["continue"]);
  assert.equal(sent[0].duplicate, undefined);
  assert.deepEqual(sent[0].delivery_ack, { level: 1, status_code: 200 });
  assert.equal(sent[1].ok, true);
  assert.equal(sent[1].duplicate, true);
  assert.equal(sent[1].delivery_ack, undefined);
  assert.equal(JSON.stringify(sent[1]).includes("continue"), false);
  await loops.inject(renewal("inj_3"));
  await loops.inject(renewal("inj_4"));
  assert.equal(typed.length, 3);
});
