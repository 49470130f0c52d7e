// Package bridgeproto is the wire protocol between svcd and the browser plugin
// over /ws/browser: one JSON object per WebSocket text message, each with a
// "type". It holds the message types, the inbound parser that validates every
// message before the daemon acts on it, and the helpers that turn captured
// credentials into metadata (names, count, fingerprint) so raw values never
// travel further than the parser. docs/bridge-protocol.md is the prose twin.
package bridgeproto
