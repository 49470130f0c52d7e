// Capped exponential backoff with full jitter: a daemon restart must not see
// every browser profile reconnect in the same millisecond, and a long outage
// must not push the retry interval past capMs.
export function backoffDelay(attempt, { baseMs = 250, capMs = 10000, random = Math.random } = {}) {
  const exp = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt));
  // Half fixed, half random: never 0 (no hot loop), never above the cap.
  return Math.floor(exp / 2 + random() * (exp / 2));
}
