// The service worker holds the one WebSocket to the daemon: hello, keepalive
// data frames (control frames do not keep an MV3 worker awake) and a capped,
// jittered reconnect. Settings (daemon URL, pairing token) come from
// chrome.storage.local, written by the options page; the token is never logged.
import { backoffDelay } from "./lib/backoff.js";
import { helloMessage, keepaliveMessage, validClientId } from "./lib/protocol.js";

const state = { ws: null, attempt: 0, timer: null, keepalive: null, status: "disconnected" };

async function settings() {
  const s = await chrome.storage.local.get(["daemonUrl", "token", "clientId"]);
  let clientId = s.clientId;
  if (!validClientId(clientId)) {
    clientId = "ext-" + crypto.randomUUID();
    await chrome.storage.local.set({ clientId });
  }
  return { daemonUrl: s.daemonUrl || "ws://127.0.0.1:4317/ws/browser", token: s.token || "", clientId };
}

function setStatus(status) {
  state.status = status;
  chrome.storage.session?.set({ status }).catch(() => {});
}

async function connect() {
  clearTimeout(state.timer);
  const s = await settings();
  if (!s.token) { setStatus("no_token"); return; }
  let ws;
  try { ws = new WebSocket(s.daemonUrl); } catch (e) { scheduleReconnect(); return; }
  state.ws = ws;
  setStatus("connecting");
  ws.onopen = () => ws.send(JSON.stringify(helloMessage({ token: s.token, clientId: s.clientId, version: chrome.runtime.getManifest().version })));
  ws.onmessage = (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    if (msg.type === "hello_ok") {
      state.attempt = 0;
      setStatus("connected");
      clearInterval(state.keepalive);
      const every = Math.max(1000, Math.floor((msg.keepalive_ms || 20000) / 2));
      state.keepalive = setInterval(() => send(keepaliveMessage()), every);
    }
  };
  ws.onclose = () => {
    clearInterval(state.keepalive);
    if (state.ws === ws) { state.ws = null; setStatus("disconnected"); scheduleReconnect(); }
  };
}

function send(msg) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(msg));
}

function scheduleReconnect() {
  clearTimeout(state.timer);
  state.timer = setTimeout(connect, backoffDelay(state.attempt++));
}

chrome.runtime.onStartup.addListener(connect);
chrome.runtime.onInstalled.addListener(connect);
chrome.storage.onChanged.addListener((changes) => {
  if (changes.token || changes.daemonUrl) { state.attempt = 0; state.ws?.close(); connect(); }
});
chrome.runtime.onMessage.addListener((req, _sender, reply) => {
  if (req?.type === "status") reply({ status: state.status });
  if (req?.type === "ws_reconnect" || req?.type === "reconnect") { state.attempt = 0; state.ws?.close(); connect(); reply({ ok: true }); }
});
connect();
