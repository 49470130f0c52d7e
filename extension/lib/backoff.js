// Reconnect delays: capped exponential backoff with full jitter, so a fleet
// of browsers does not reconnect in lockstep after a daemon restart.
export function backoffDelay(attempt, { baseMs = 250, maxMs = 15000, random = Math.random } = {}) {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt));
  return Math.round(exp / 2 + random() * (exp / 2));
}

// wsReconnectOptions reads the ws_reconnect action's options under any of
// the aliases the daemon documents (it sends the canonical names, but a
// hand-written caller may not).
export function wsReconnectOptions(opts = {}) {
  const pick = (...names) => {
    for (const n of names) {
      const v = opts[n];
      if (Number.isInteger(v) && v >= 0) return v;
    }
    return undefined;
  };
  return {
    disconnectMs: pick("disconnectMs", "disconnect_ms", "delayMs", "delay_ms") ?? 0,
    repeatCount: pick("repeatCount", "repeat_count") ?? 1,
    repeatIntervalMs: pick("repeatIntervalMs", "repeat_interval_ms", "intervalMs", "interval_ms") ?? 1000,
  };
}
