// DeliveredKeys remembers the delivery_key of every conversation_inject
// whose text was really typed and sent (docs/bridge-protocol.md), so a
// daemon that crashed before it recorded the inject_result, and sends the
// same renewal or report again, gets ok:true, duplicate:true and nothing is
// typed twice. Keys are ids (a job's, a task's), never message text.
//
// The last LIMIT keys are kept in chrome.storage.session (memory, never
// disk): they survive a service worker restart, not a browser restart; a
// redelivery after that is typed again (at-least-once, as without keys).
// A key being typed right now is held in memory: a redelivery meanwhile
// waits for that attempt and is a duplicate when it succeeded, typed when
// it failed. Its collaborators are passed in, so node's test runner drives
// it without a browser (test/delivered.test.mjs).

export const DELIVERED_LIMIT = 200;
const KEY = /^[A-Za-z0-9._:-]{1,128}$/;

// validKey: the daemon's rule; a key outside it is not used (the inject is
// typed as if it had none).
export const validKey = (k) => typeof k === "string" && KEY.test(k);

export class DeliveredKeys {
  // deps: load() -> the saved keys (oldest first); store(keys) keeps them.
  constructor({ load = async () => [], store = async () => {}, limit = DELIVERED_LIMIT } = {}) {
    Object.assign(this, { load, store, limit });
    this.keys = null; // loaded lazily: the list, oldest first
    this.inFlight = new Map(); // key -> promise of the attempt's result
  }

  async list() {
    if (!this.keys) {
      const saved = await this.load().catch(() => []);
      this.keys ||= Array.isArray(saved) ? saved.filter(validKey).slice(-this.limit) : [];
    }
    return this.keys;
  }

  async has(key) { return (await this.list()).includes(key); }

  async mark(key) {
    const keys = await this.list();
    if (keys.includes(key)) return;
    keys.push(key);
    if (keys.length > this.limit) keys.splice(0, keys.length - this.limit);
    await this.store([...keys]).catch(() => {});
  }

  // once runs deliver() -> {ok, ...} for key unless key was delivered: then
  // it answers {ok: true, duplicate: true} without running it. A key is
  // marked only when deliver says ok. No key (or an invalid one): deliver
  // runs, as before keys existed.
  async once(key, deliver) {
    if (!validKey(key)) return deliver();
    for (;;) {
      const running = this.inFlight.get(key);
      if (!running) break;
      await running.catch(() => {});
    }
    if (await this.has(key)) return { ok: true, duplicate: true };
    // Re-check: another caller may have started while has() awaited.
    if (this.inFlight.has(key)) return this.once(key, deliver);
    const attempt = (async () => {
      const r = await deliver();
      if (r && r.ok) await this.mark(key);
      return r;
    })();
    this.inFlight.set(key, attempt);
    try {
      return await attempt;
    } finally {
      this.inFlight.delete(key);
    }
  }
}
