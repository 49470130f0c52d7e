// ConversationLoops applies the client loop rules (lib/loop.js) to the live
// conversations of the pages: one LoopGuard per local_conversation_id. The
// daemon executes a reported reply and sends its report back as
// conversation_inject; this decides which replies are reported, waits before
// typing a report, drops it when the user typed, counts failed rounds and
// types the error summary on the third. Its collaborators are passed in, so
// node's test runner drives it without a browser (test/convloop.test.mjs).
import { DeliveredKeys } from "./delivered.js";
import { LoopGuard, STOP_TYPING, STOP_FAILURES, isReport, hasInstructions, reportFailed, firstFailure } from "./loop.js";

export class ConversationLoops {
  // deps: send(msg) to the daemon; type(ref, text) -> {ok, code?, reason?, status?}
  // types into the conversation's page; sleep(ms); save(states) keeps the
  // guards over a service worker restart; config {maxRounds, waitMs, maxFailures};
  // delivered (lib/delivered.js) remembers the delivery_keys already typed.
  constructor({ send, type, sleep = (ms) => new Promise((r) => setTimeout(r, ms)), save = () => {}, config = {}, delivered = new DeliveredKeys() }, saved = {}) {
    Object.assign(this, { send, type, sleep, save, config, delivered });
    this.guards = new Map();
    this.refs = new Map();
    for (const [id, st] of Object.entries(saved || {})) {
      this.guards.set(id, new LoopGuard(config, st));
      if (st.platform) this.refs.set(id, { platform: st.platform, local: id, remote: st.remote || "" });
    }
  }

  guard(ref) {
    this.refs.set(ref.local, { platform: ref.platform, local: ref.local, remote: ref.remote });
    let g = this.guards.get(ref.local);
    if (!g) this.guards.set(ref.local, (g = new LoopGuard(this.config)));
    return g;
  }

  // states is what the popup and the overlay show, per conversation.
  states() {
    const out = {};
    for (const [id, g] of this.guards) out[id] = { ...g.state(), platform: this.refs.get(id)?.platform || "", remote: this.refs.get(id)?.remote || "" };
    return out;
  }

  // changed keeps the guards and tells the daemon about every loop whose
  // state (running with n rounds, or stopped and why) moved since it last
  // heard: conversation_loop, so a loop stopped here is visible there too.
  changed() {
    this.save(this.states());
    this.reported ||= new Map();
    for (const [id, g] of this.guards) {
      const ref = this.refs.get(id);
      if (!ref || !ref.platform) continue;
      const now = { state: g.stopped ? "stopped" : "running", reason: g.stopped || undefined, rounds: g.rounds, max_rounds: g.maxRounds };
      const key = JSON.stringify(now);
      if (this.reported.get(id) === key) continue;
      this.reported.set(id, key);
      this.send({ type: "conversation_loop", platform: ref.platform, local_conversation_id: id, remote_conversation_id: ref.remote, ...now });
    }
  }

  // reply: a final AI reply of the page. A reply with instructions is only
  // reported while the loop runs and under the round limit: reporting it is
  // what makes the daemon execute it. A reply decided on before (the page
  // reloaded) is not reported again: the daemon already has it, or it was
  // held back and must stay so. It returns whether it was reported.
  reply(ref, { message_id, text }) {
    const g = this.guard(ref);
    if (g.repeat(message_id)) {
      this.changed();
      return false;
    }
    const run = g.shouldRun(text);
    this.changed();
    if (!run && hasInstructions(text) && !isReport(text)) return false;
    this.send(message(ref, message_id, text, "assistant"));
    return true;
  }

  // userMessages: the user messages a page shows (those sent while it was
  // open, and those already there when it loaded), by id in page order. Each
  // one seen for the first time is reported once and starts a new loop; the
  // daemon hears it as role user (which resets its round count and marks the
  // id seen) with the id only: it stores no text of it, so none is sent. Ids
  // decided on before (a reload, another tab of the conversation, a content
  // script attached after a worker restart) are not reported again. It
  // returns the ids reported.
  userMessages(ref, ids) {
    const g = this.guard(ref);
    const fresh = g.unseenUsers(ids.filter((id) => typeof id === "string" && id !== ""));
    if (fresh.length) g.userMessage();
    this.changed();
    for (const id of fresh) this.send(message(ref, id, "", "user"));
    return fresh;
  }

  // typing: the user types in the page; the loop stops at once.
  typing(ref) {
    const g = this.guard(ref);
    if (g.stopped === STOP_TYPING) return;
    g.userTyped();
    this.changed();
  }

  // inject answers one conversation_inject. One whose delivery_key was
  // typed before is answered duplicate and typed no more (a daemon that
  // crashed before it recorded the answer sends it again).
  async inject(m) {
    return this.answer(m, await this.delivered.once(m.delivery_key, () => this.deliver(m)));
  }

  // deliver types one injection and says how it went ({ok, code?, reason?,
  // status?}). Reports follow the loop rules; other kinds (renewal) are
  // typed as they are.
  async deliver(m) {
    const ref = { platform: m.platform, local: m.local_conversation_id, remote: m.remote_conversation_id };
    if (m.kind !== "instruction_report") return this.type(ref, m.text);
    const g = this.guard(ref);
    const stopped = () => ({ ok: false, code: g.stopped === STOP_TYPING ? "user_typing" : "loop_stopped", reason: "the loop stopped: " + g.stopped });
    // A loop stopped by the user or by failures types nothing more.
    if (g.stopped === STOP_TYPING || g.stopped === STOP_FAILURES) return stopped();
    let text = m.text;
    let counted = false;
    if (reportFailed(text)) {
      counted = true;
      const summary = g.record(false, firstFailure(text));
      if (summary) text = summary;
      this.changed();
    }
    // Rule 4: wait before typing; rule 5: the user typing meanwhile stops
    // the loop and nothing more is injected. A user message meanwhile began
    // a new loop: this report belongs to the old one and is not typed.
    const epoch = g.epoch;
    await this.sleep(g.waitMs);
    if (g.epoch !== epoch) return { ok: false, code: "user_typing", reason: "the user wrote meanwhile" };
    if (g.stopped === STOP_TYPING) return stopped();
    const r = await this.type(ref, text);
    if (!r.ok && r.code === "user_typing") {
      if (g.epoch === epoch) g.userTyped();
    } else if (!counted) {
      const summary = g.record(!!r.ok, r.ok ? "" : "the report could not be typed (" + (r.code || "inject_failed") + ")");
      if (summary) await this.type(ref, summary);
    }
    this.changed();
    return r;
  }

  answer(m, r) {
    const ok = !!(r && r.ok);
    const duplicate = ok && !!r.duplicate;
    this.send({
      type: "inject_result", inject_id: m.inject_id, ok,
      delivery_ack: ok && !duplicate ? { level: r.status ? 1 : 0, status_code: r.status || undefined } : undefined,
      error: ok ? undefined : { code: (r && r.code) || "inject_failed", message: (r && r.reason) || "the page did not take the text" },
      duplicate: duplicate || undefined,
    });
    return ok;
  }
}

function message(ref, id, text, role) {
  return { type: "conversation_message", platform: ref.platform, local_conversation_id: ref.local, remote_conversation_id: ref.remote, message_id: id, text, role };
}
