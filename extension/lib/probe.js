// The reconnect wake-up (docs/extension.md "Reconnect"): while the socket is
// down, a cheap probe of the daemon's /readyz every 50-100 ms (jittered) for
// the first 20 s of a drop, then every 1-2 s. When the daemon answers 200
// after the probe saw it down (refused, timed out or not ready), onBack
// connects at once rather than at the next backoff step. Only that
// transition wakes it, once per round: a daemon that is up and refuses the
// socket gets no attempt from the probe, only the backoff's. A round runs
// from the drop to hello_ok (stop) or to its one wake-up; the backoff's
// attempts inside it do not end it.
export class ReadyProbe {
  constructor({ check, wanted, onBack, fastMs = 50, slowMs = 1000, fastForMs = 20000, random = Math.random, now = Date.now, setTimer = setTimeout, clearTimer = clearTimeout }) {
    Object.assign(this, { check, wanted, onBack, fastMs, slowMs, fastForMs, random, now });
    // Called as plain functions: a browser's setTimeout called as a method
    // of another object throws "Illegal invocation" (Node's does not).
    this.setTimer = (fn, ms) => setTimer(fn, ms);
    this.clearTimer = (id) => clearTimer(id);
    this.timer = null;
    this.since = 0;
    this.sawDown = false;
  }

  get running() { return this.timer !== null; }

  // start begins a round unless one runs (a failed attempt inside a round
  // keeps its state: the daemon must be seen back to connect again).
  start() {
    if (this.timer !== null) return;
    this.since = this.now();
    this.sawDown = false;
    this.schedule();
  }

  stop() {
    if (this.timer !== null && this.timer !== true) this.clearTimer(this.timer);
    this.timer = null;
  }

  delay() {
    const base = this.now() - this.since < this.fastForMs ? this.fastMs : this.slowMs;
    return Math.round(base + this.random() * base);
  }

  schedule() {
    this.timer = this.setTimer(() => this.tick(), this.delay());
  }

  async tick() {
    this.timer = true; // a check is running: start() leaves this round alone
    // A socket is connecting (the backoff's attempt): the round goes on, so
    // a daemon seen down before that attempt failed still counts.
    if (!this.wanted()) { this.schedule(); return; }
    let up = false;
    try { up = await this.check(); } catch { up = false; }
    if (this.timer !== true) return; // stopped while checking
    if (!this.wanted()) { this.schedule(); return; }
    if (!up) { this.sawDown = true; this.schedule(); return; }
    // onBack may decline (false: a socket younger than a second is still
    // connecting); the round goes on and asks again.
    if (this.sawDown) {
      this.timer = null;
      if (this.onBack() === false) this.schedule();
      return;
    }
    // Up all along (a daemon that refuses the socket, or a ws_reconnect):
    // only the backoff connects; look again at the slow pace.
    this.since = this.now() - this.fastForMs;
    this.schedule();
  }
}

// readyzURL is the daemon's /readyz beside its WebSocket address.
export function readyzURL(wsURL) {
  const u = new URL(String(wsURL).replace(/^ws/, 'http'));
  u.pathname = '/readyz';
  u.search = '';
  u.hash = '';
  return u.href;
}
