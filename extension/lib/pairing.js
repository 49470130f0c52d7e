// Pairing with the daemon (docs/extension.md "Pairing"; issue 25). The
// extension keeps at most one of three authenticators in
// chrome.storage.local and sends it in hello:
//   credential  - the per-client bridge credential hello_ok handed out once;
//   pairingCode - a one-time code typed into the options page
//                 (svcctl browser pair), exchanged at the next hello;
//   token       - the daemon's shared token, only where the daemon runs
//                 with browser_pairing = "token".
// These functions decide; sw.js and options.js only apply them to storage.

export const PAIRING_KEYS = ["credential", "pairingCode", "token"];

// helloAuth is the authenticator field of the next hello, or null when
// nothing is stored (the popup then says to pair). A fresh code wins over
// a stored credential: typing one means "pair again".
export function helloAuth({ credential, pairingCode, token } = {}) {
  if (pairingCode) return { code: pairingCode.trim() };
  if (credential) return { credential };
  if (token) return { token };
  return null;
}

// saveFromOptions is what the options page stores for what the user typed:
// a code replaces everything else; a token (legacy) replaces a credential.
// Empty fields keep what is stored.
export function saveFromOptions({ code = "", token = "" } = {}) {
  code = code.trim();
  if (code) return { set: { pairingCode: code }, remove: ["credential", "token"] };
  if (token) return { set: { token }, remove: ["credential", "pairingCode"] };
  return { set: {}, remove: [] };
}

// afterHelloOk: a hello_ok carrying a credential replaces the code (it
// worked once and never will again) and any shared token.
export function afterHelloOk(msg) {
  if (msg && typeof msg.credential === "string" && msg.credential) {
    return { set: { credential: msg.credential }, remove: ["pairingCode", "token"] };
  }
  return { set: {}, remove: [] };
}

const REFUSALS = {
  pairing_code_invalid: "the pairing code is unknown or was already used; issue a new one with svcctl browser pair",
  pairing_code_expired: "the pairing code expired; issue a new one with svcctl browser pair",
  credential_invalid: "this browser's pairing is no longer valid; pair again with a new code",
  credential_revoked: "this browser's pairing was revoked; pair again with a new code",
  token_pairing_disabled: "the daemon no longer accepts the shared token; pair with a code from svcctl browser pair",
  pairing_rate_limited: "too many failed pairing attempts (perhaps not this browser's); retrying",
};

// Retry delays after pairing_rate_limited: the daemon counts failures in a
// one-minute window, so the first retry comes after some seconds and the
// steps double up to a minute (with jitter, as lib/backoff.js).
export const RATE_LIMITED_BACKOFF = { baseMs: 5000, maxMs: 60000 };

// afterRefusal is what a refusal (the error frame before close 4401, code
// may be empty when the daemon sent none) means: the message the popup
// shows, the storage to drop, since a refused code or credential can never
// work again, and whether to retry: only pairing_rate_limited says nothing
// about what this browser holds (others' failures may have caused it), so
// the worker keeps it and connects again after retryMs.
export function afterRefusal(code, message = "", retryMs = 0) {
  let text = "pairing refused: " + (REFUSALS[code] || message || "check the pairing code or token in the options page");
  let remove = [];
  if (code === "pairing_code_invalid" || code === "pairing_code_expired") remove = ["pairingCode"];
  if (code === "credential_invalid" || code === "credential_revoked") remove = ["credential"];
  const retry = code === "pairing_rate_limited";
  if (retry) text += ` in ${Math.max(1, Math.round(retryMs / 1000))} s`;
  return { text, remove, retry };
}

// pairingSummary is the options page's one line about the stored state.
export function pairingSummary({ credential, pairingCode, token } = {}) {
  if (pairingCode) return "a pairing code is waiting to be exchanged at the next connection";
  if (credential) return "paired: this browser holds its own bridge credential";
  if (token) return "paired with the shared token (browser_pairing = \"token\")";
  return "not paired: run svcctl browser pair and enter the code";
}
