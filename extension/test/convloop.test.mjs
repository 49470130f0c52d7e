import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationLoops } from "../lib/convloop.js";
import { RESULT_MARKER, STOP_ROUNDS, STOP_TYPING, STOP_FAILURES, firstFailure } from "../lib/loop.js";

const ref = { platform: "platform_a", local: "conv-1", remote: "1" };
const instrReply = (n) => ({ message_id: "m" + n, text: `round ${n}\n\`\`\`instr\n@svc::status\n\`\`\`` });
const okReport = `${RESULT_MARKER}\n-- @svc::status --\n成功\n{}`;
const badReport = `${RESULT_MARKER}\n-- @svc::nope --\n失败\nunknown tool nope`;

// harness records what goes to the daemon and into the page; sleep is
// instant but counted, so the 2 s wait is checked without waiting.
function harness(config = {}, typeResult = () => ({ ok: true, status: 200 })) {
  const h = { sent: [], typed: [], sleeps: [], saved: null };
  h.loops = new ConversationLoops({
    send: (m) => h.sent.push(m),
    type: async (_r, text) => { h.typed.push(text); return typeResult(text); },
    sleep: async (ms) => { h.sleeps.push(ms); if (h.duringSleep) h.duringSleep(); },
    save: (st) => { h.saved = st; },
    config,
  });
  h.results = () => h.sent.filter((m) => m.type === "inject_result");
  h.reported = () => h.sent.filter((m) => m.type === "conversation_message");
  return h;
}

const inject = (id, text) => ({ type: "conversation_inject", inject_id: id, platform: ref.platform, local_conversation_id: ref.local, remote_conversation_id: ref.remote, kind: "instruction_report", text });

test("replies are reported up to the round limit, then the loop stops", async () => {
  const h = harness({ maxRounds: 2 });
  assert.equal(h.loops.reply(ref, instrReply(1)), true);
  await h.loops.inject(inject("inj_1", okReport));
  assert.equal(h.loops.reply(ref, instrReply(2)), true);
  assert.equal(h.loops.reply(ref, instrReply(3)), false);
  assert.equal(h.reported().length, 2);
  assert.equal(h.saved[ref.local].stopped, STOP_ROUNDS);
  assert.deepEqual(h.sleeps, [2000]);
  assert.deepEqual(h.typed, [okReport]);
  // A reply without instructions is reported (metadata) and ends nothing more.
  assert.equal(h.loops.reply(ref, { message_id: "m4", text: "done" }), true);
  // The user writes: a new loop, reported as role user without its text.
  h.loops.userMessages(ref, ["u-1"]);
  const u = h.reported().at(-1);
  assert.equal(u.role, "user");
  assert.equal(u.text, "");
  assert.equal(h.loops.reply(ref, instrReply(5)), true);
  assert.equal(h.saved[ref.local].rounds, 1);
});

test("own output is never reported for execution", () => {
  const h = harness();
  h.loops.reply(ref, { message_id: "r", text: okReport + "\n```instr\n@svc::status\n```" });
  assert.equal(h.reported().length, 1);
  assert.equal(h.saved?.[ref.local]?.rounds ?? 0, 0);
});

test("user typing during the wait drops the report and stops the loop", async () => {
  const h = harness();
  h.loops.reply(ref, instrReply(1));
  h.duringSleep = () => h.loops.typing(ref);
  await h.loops.inject(inject("inj_1", okReport));
  assert.deepEqual(h.typed, []);
  const r = h.results()[0];
  assert.equal(r.ok, false);
  assert.equal(r.error.code, "user_typing");
  assert.equal(h.saved[ref.local].stopped, STOP_TYPING);
  assert.equal(h.loops.reply(ref, instrReply(2)), false);
  // A report arriving after the stop is not typed either, without waiting.
  h.duringSleep = null;
  await h.loops.inject(inject("inj_2", okReport));
  assert.deepEqual(h.typed, []);
  assert.equal(h.sleeps.length, 1);
});

test("the page refusing because the user typed stops the loop too", async () => {
  const h = harness({}, () => ({ ok: false, code: "user_typing", reason: "the user is typing" }));
  h.loops.reply(ref, instrReply(1));
  await h.loops.inject(inject("inj_1", okReport));
  assert.equal(h.saved[ref.local].stopped, STOP_TYPING);
  assert.equal(h.saved[ref.local].failures, 0);
});

test("three failed rounds type the summary instead of the third report", async () => {
  const h = harness();
  for (let i = 1; i <= 3; i++) {
    assert.equal(h.loops.reply(ref, instrReply(i)), true);
    await h.loops.inject(inject("inj_" + i, badReport));
  }
  assert.equal(h.typed.length, 3);
  assert.deepEqual(h.typed.slice(0, 2), [badReport, badReport]);
  const summary = h.typed[2];
  assert.ok(summary.startsWith(RESULT_MARKER + "\n-- loop stopped --\n失败\n3 consecutive rounds failed"), summary);
  assert.ok(summary.includes("round 3: @svc::nope: unknown tool nope"), summary);
  assert.equal(h.saved[ref.local].stopped, STOP_FAILURES);
  assert.equal(h.loops.reply(ref, instrReply(4)), false);
  await h.loops.inject(inject("inj_4", badReport));
  assert.equal(h.typed.length, 3);
  assert.equal(h.results().at(-1).error.code, "loop_stopped");
});

test("a success in between resets the failure count; failed injects count", async () => {
  let fail = true;
  const h = harness({}, () => (fail ? { ok: false, code: "no_tab" } : { ok: true }));
  h.loops.reply(ref, instrReply(1));
  await h.loops.inject(inject("a", okReport));
  h.loops.reply(ref, instrReply(2));
  await h.loops.inject(inject("b", okReport));
  assert.equal(h.saved[ref.local].failures, 2);
  fail = false;
  h.loops.reply(ref, instrReply(3));
  await h.loops.inject(inject("c", okReport));
  assert.equal(h.saved[ref.local].failures, 0);
  assert.equal(h.saved[ref.local].stopped, "");
  fail = true;
  for (const id of ["d", "e", "f"]) { h.loops.reply(ref, instrReply(id)); await h.loops.inject(inject(id, okReport)); }
  assert.equal(h.saved[ref.local].stopped, STOP_FAILURES);
  assert.ok(h.typed.at(-1).includes("-- loop stopped --"));
});

test("guards survive a worker restart through their saved state", () => {
  const h = harness({ maxRounds: 2 });
  h.loops.reply(ref, instrReply(1));
  h.loops.reply(ref, instrReply(2));
  const again = new ConversationLoops({ send: () => {}, type: async () => ({ ok: true }), config: { maxRounds: 2 } }, h.saved);
  assert.equal(again.reply(ref, instrReply(3)), false);
  assert.equal(again.states()[ref.local].stopped, STOP_ROUNDS);
});

test("renewal injects are typed as they are", async () => {
  const h = harness();
  await h.loops.inject({ ...inject("r1", "please continue"), kind: "renewal" });
  assert.deepEqual(h.typed, ["please continue"]);
  assert.deepEqual(h.sleeps, []);
});

test("firstFailure names the label and the daemon's error line", () => {
  assert.equal(firstFailure(badReport), "@svc::nope: unknown tool nope");
  assert.equal(firstFailure(okReport), "failed");
});

test("a report of the loop before the user's message is never typed", async () => {
  const h = harness();
  h.loops.reply(ref, instrReply(1));
  h.duringSleep = () => { h.loops.typing(ref); h.loops.userMessages(ref, ["u-1"]); };
  await h.loops.inject(inject("inj_1", okReport));
  assert.deepEqual(h.typed, []);
  assert.equal(h.saved[ref.local].stopped, "");
  assert.equal(h.loops.reply(ref, instrReply(2)), true);
});

test("a reply seen again (page reload) counts no second round", () => {
  const h = harness({ maxRounds: 1 });
  assert.equal(h.loops.reply(ref, instrReply(1)), true);
  assert.equal(h.loops.reply(ref, instrReply(1)), false);
  assert.equal(h.reported().length, 1);
  assert.equal(h.saved[ref.local].rounds, 1);
  assert.equal(h.saved[ref.local].stopped, "");
  // A reply held back by the round limit stays held back after a reload:
  // the daemon never saw it, so reporting it now would run it.
  assert.equal(h.loops.reply(ref, instrReply(2)), false);
  assert.equal(h.loops.reply(ref, instrReply(2)), false);
  assert.equal(h.reported().length, 1);
});

test("the daemon hears each change of a loop once (conversation_loop)", async () => {
  const h = harness({ maxRounds: 2 });
  const loops = () => h.sent.filter((m) => m.type === "conversation_loop").map(({ state, reason, rounds, max_rounds }) => ({ state, reason, rounds, max_rounds }));
  h.loops.reply(ref, instrReply(1));
  await h.loops.inject(inject("inj_1", okReport));
  h.loops.reply(ref, instrReply(2));
  h.loops.reply(ref, instrReply(3));
  h.loops.reply(ref, instrReply(3)); // seen before: nothing new to say
  assert.deepEqual(loops(), [
    { state: "running", reason: undefined, rounds: 1, max_rounds: 2 },
    { state: "running", reason: undefined, rounds: 2, max_rounds: 2 },
    { state: "stopped", reason: STOP_ROUNDS, rounds: 2, max_rounds: 2 },
  ]);
  const last = h.sent.filter((m) => m.type === "conversation_loop").at(-1);
  assert.equal(last.platform, ref.platform);
  assert.equal(last.local_conversation_id, ref.local);
  assert.equal(last.remote_conversation_id, ref.remote);
  // The user writing starts a new loop: reported as running again.
  h.loops.userMessages(ref, ["u1"]);
  assert.deepEqual(loops().at(-1), { state: "running", reason: undefined, rounds: 0, max_rounds: 2 });
});

test("user messages already in the page are reported once each, by id, with no text", () => {
  const h = harness({ maxRounds: 1 });
  const users = () => h.reported().filter((m) => m.role === "user");
  // The page loads with two user messages and a reply: both messages are
  // new, so both reach the daemon (which resets its round count on them).
  assert.deepEqual(h.loops.userMessages(ref, ["u1", "u2"]), ["u1", "u2"]);
  assert.deepEqual(users().map((m) => [m.message_id, m.text]), [["u1", ""], ["u2", ""]]);
  assert.equal(h.loops.reply(ref, instrReply(1)), true);
  assert.equal(h.loops.reply(ref, instrReply(2)), false);
  assert.equal(h.saved[ref.local].stopped, STOP_ROUNDS);
  // A reload (or a content script attached after a worker restart) shows
  // them again: nothing is reported and the stopped loop stays stopped.
  assert.deepEqual(h.loops.userMessages(ref, ["u1", "u2"]), []);
  assert.equal(users().length, 2);
  assert.equal(h.saved[ref.local].stopped, STOP_ROUNDS);
  // A message the user sent since is the only one reported; it starts a new loop.
  assert.deepEqual(h.loops.userMessages(ref, ["u1", "u2", "u3"]), ["u3"]);
  assert.equal(users().length, 3);
  assert.equal(h.saved[ref.local].stopped, "");
});

test("a reload of a long conversation reports nothing again", () => {
  const h = harness();
  const ids = Array.from({ length: 120 }, (_, i) => "u" + i);
  assert.equal(h.loops.userMessages(ref, ids).length, 120);
  // The remembered window holds the latest ids only; the history before the
  // last one seen was reported with it and is not reported again.
  assert.deepEqual(h.loops.userMessages(ref, ids), []);
  assert.deepEqual(h.loops.userMessages(ref, [...ids, "u120"]), ["u120"]);
});

test("user message ids survive a worker restart (the saved guard)", () => {
  const h = harness();
  h.loops.userMessages(ref, ["u1"]);
  const again = new ConversationLoops({ send: (m) => h.sent.push(m), type: async () => ({ ok: true }), save: () => {} }, h.saved);
  assert.deepEqual(again.userMessages(ref, ["u1"]), []);
  assert.deepEqual(again.userMessages(ref, ["", 7, "u2"]), ["u2"]);
});
