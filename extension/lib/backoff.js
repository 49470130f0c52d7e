// Capped exponential backoff with full jitter for the daemon WebSocket.
// Pure so node --test can check it; rand is injected for the same reason.
export const BACKOFF_BASE_MS = 250;
export const BACKOFF_MAX_MS = 10_000;

// backoffDelay returns the wait before reconnect attempt `attempt` (0-based):
// a uniform draw in [cap/2, cap] where cap = min(max, base * 2^attempt), so
// many browsers restarting together do not reconnect in lockstep.
export function backoffDelay(attempt, rand = Math.random, base = BACKOFF_BASE_MS, max = BACKOFF_MAX_MS) {
  const n = Math.max(0, Math.min(30, Math.floor(attempt)));
  const cap = Math.min(max, base * 2 ** n);
  return Math.round(cap / 2 + rand() * (cap / 2));
}
