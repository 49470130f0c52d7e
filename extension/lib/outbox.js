// Outbox keeps the conversation reports (docs/bridge-protocol.md:
// conversation_link, conversation_message, conversation_loop) that could not
// go out because the WebSocket was down (daemon restarting, worker
// reconnecting): the client loop has already decided on them (LoopGuard.seen
// holds their ids, so a page reload does not report them again), and
// dropping them would lose an AI reply for good and stall the loop.
//
// A report leaves the waiting list only once it was written to an open,
// paired socket (trySend returned true); until then it is kept, in order, in
// the store (chrome.storage.session: memory, never disk), so a worker
// restart keeps it too. Written is not read: a daemon killed or restarting
// may not have read the last frames before the socket closed. So a written
// report stays in flight (in memory) until a frame from the daemon arrives
// after it (the daemon was alive past it), and goes back to the head of the
// waiting list when the socket drops first. Such a resend is safe: the
// daemon counts a repeated message_id as "repeated" and never runs it twice,
// and link and loop reports are idempotent. What is in flight is not kept
// over a worker restart: a stopping worker closes its socket after what it
// wrote, and resending it would only make the daemon count repeats.
//
// Its collaborators are passed in, so node's test runner drives it without a
// browser (test/outbox.test.mjs).

// KEPT_TYPES are the reports the outbox keeps. The others are answers to one
// daemon request on one connection (inject_result, action_result, relay
// frames; the daemon gave up on them with that connection) or are sent anew
// at every hello (credentials, api_endpoints).
export const KEPT_TYPES = new Set(["conversation_link", "conversation_message", "conversation_loop"]);

export const OUTBOX_LIMIT = 100;
// OUTBOX_BYTES stays well under chrome.storage.session's 10 MB quota (a
// reply may be up to 256 KiB).
export const OUTBOX_BYTES = 4 << 20;
// REPORT_BYTES: no valid report comes near it (a reply's text is at most
// 256 KiB), and a frame past the daemon's max_message_bytes (8 MiB) closes
// the connection: kept, it would be sent again after every reconnect.
export const REPORT_BYTES = 2 << 20;

export class Outbox {
  // deps: load() -> the saved entries; store(entries) keeps them; trySend(msg)
  // -> true only when msg was written to an open, paired socket; onChange(n)
  // hears the pending count; warn(text) for a dropped report.
  constructor({ load, store, trySend, onChange = () => {}, warn = (t) => console.warn(t), limit = OUTBOX_LIMIT, maxBytes = OUTBOX_BYTES }) {
    Object.assign(this, { load, store, trySend, onChange, warn, limit, maxBytes });
    this.entries = null; // loaded on first use
    this.stored = 0; // how many entries the store holds
    this.notified = 0; // the pending count onChange last heard
    this.inflight = []; // {seq, msg}: written, no daemon frame since
    this.seq = 0; // counts the writes
    this.chain = Promise.resolve();
  }

  // pending is the number of reports waiting (0 until loaded).
  get pending() {
    return this.entries ? this.entries.length : 0;
  }

  // post sends msg now when nothing waits and the socket is up, else keeps it
  // behind the waiting ones. It resolves to whether msg went out.
  post(msg) {
    return this.run(async () => {
      if (JSON.stringify(msg).length > REPORT_BYTES) {
        this.warn("svcd: a report too large for the daemon was dropped");
        return false;
      }
      this.entries.push(msg);
      this.bound();
      await this.drain();
      return !this.entries.includes(msg);
    });
  }

  // flush sends the waiting reports in order (after a hello_ok), stopping at
  // the first one that cannot go; it resolves to how many went out.
  flush() {
    return this.run(() => this.drain());
  }

  // heard: a frame from the daemon arrived; what was written before it is
  // taken as read.
  heard() {
    const upTo = this.seq;
    return this.run(() => { this.inflight = this.inflight.filter((e) => e.seq > upTo); });
  }

  // dropped: the socket closed; what is in flight waits again, ahead of the
  // rest, for the next hello.
  dropped() {
    return this.run(async () => {
      if (!this.inflight.length) return;
      this.entries = [...this.inflight.map((e) => e.msg), ...this.entries];
      this.inflight = [];
      this.bound();
      await this.drain();
    });
  }

  // run serializes every change: the load, posts and flushes, so the order
  // of the reports is the order they were posted in, over a worker restart too.
  run(op) {
    const p = this.chain.then(async () => {
      if (!this.entries) {
        let saved = [];
        try { saved = (await this.load()) || []; } catch { /* nothing kept */ }
        this.entries = Array.isArray(saved) ? saved : [];
        this.stored = this.entries.length;
        // Reports posted before the load go behind the saved ones.
        this.notify();
      }
      return op();
    });
    this.chain = p.catch(() => {});
    return p;
  }

  async drain() {
    const before = this.entries.length;
    while (this.entries.length && this.sendOne(this.entries[0])) this.inflight.push({ seq: ++this.seq, msg: this.entries.shift() });
    if (this.entries.length || this.stored) {
      try {
        await this.store(this.entries);
        this.stored = this.entries.length;
      } catch {
        this.warn("svcd: the outbox could not be kept in session storage");
      }
    }
    this.notify();
    return before - this.entries.length;
  }

  notify() {
    if (this.notified === this.entries.length) return;
    this.notified = this.entries.length;
    this.onChange(this.notified);
  }

  sendOne(msg) {
    try { return this.trySend(msg) === true; } catch { return false; }
  }

  // bound drops the oldest reports past the limits, saying so without
  // naming anything of their content.
  bound() {
    let bytes = this.entries.reduce((n, m) => n + JSON.stringify(m).length, 0);
    let dropped = 0;
    while (this.entries.length > 1 && (this.entries.length > this.limit || bytes > this.maxBytes)) {
      bytes -= JSON.stringify(this.entries.shift()).length;
      dropped++;
    }
    if (dropped) this.warn(`svcd: outbox full, dropped the ${dropped} oldest report(s) waiting for the daemon`);
  }
}
