// Messages the extension sends to the daemon, built exactly as
// docs/bridge-protocol.md names their fields.
export function helloMessage({ token, clientId, version }) {
  return { type: "hello", token, clientId, browser: "chrome", extension_version: version };
}

export function keepaliveMessage(now = Date.now()) {
  return { type: "keepalive", ts: now };
}

// clientId rule from the protocol: ≤128 bytes, no spaces, control characters or "/".
export function validClientId(id) {
  return typeof id === "string" && id.length > 0 && new TextEncoder().encode(id).length <= 128 &&
    !/[\s\/\x00-\x1f\x7f]/.test(id);
}
