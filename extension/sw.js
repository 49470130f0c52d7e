// The service worker holds the one WebSocket to the daemon (docs/bridge-protocol.md):
// hello with the pairing token, a keepalive data frame every keepalive_ms
// (MV3 service workers sleep after 30 s without one), reconnect with capped
// backoff and jitter after any drop, and the relay, action and injection
// handlers. Captured values never leave the page: nothing here logs or echoes
// a header, cookie or body.
import { backoffDelay, wsReconnectOptions } from "./lib/backoff.js";
import { adapterFor } from "./lib/adapters.js";

const state = { ws: null, attempt: 0, connected: false, connecting: false, snapshot: null, keepalive: null, cfg: null, adapters: [], aborts: new Map(), held: false };

async function loadConfig() {
  const stored = await chrome.storage.local.get(["daemonURL", "token", "clientId"]);
  let local = {};
  try {
    const r = await fetch(chrome.runtime.getURL("config.local.json"));
    if (r.ok) local = await r.json();
  } catch {
    // no bundled development config: the options page is the source
  }
  const cfg = { daemonURL: "ws://127.0.0.1:4317/ws/browser", ...local, ...Object.fromEntries(Object.entries(stored).filter(([, v]) => v)) };
  if (!cfg.clientId) {
    cfg.clientId = "ext-" + crypto.randomUUID().slice(0, 8);
    await chrome.storage.local.set({ clientId: cfg.clientId });
  }
  const idx = await (await fetch(chrome.runtime.getURL("adapters/index.json"))).json();
  const adapters = [];
  for (const f of idx) adapters.push(await (await fetch(chrome.runtime.getURL("adapters/" + f))).json());
  for (const a of adapters) {
    if (cfg.origins && cfg.origins[a.platform]) a.origin = cfg.origins[a.platform];
  }
  return { cfg, adapters };
}

async function publish() {
  await chrome.storage.session.set({ status: { connected: state.connected, clientId: state.cfg?.clientId, snapshot: state.snapshot, at: Date.now() } });
}

function send(msg) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(msg));
}

async function connect() {
  // One connection per clientId: a second one would replace the first
  // (close 4409) and the two would take turns forever. The check and the
  // claim happen before any await.
  if (state.held || state.connecting || (state.ws && state.ws.readyState <= WebSocket.OPEN)) return;
  state.connecting = true;
  try {
    if (!state.cfg) Object.assign(state, await loadConfig());
  } finally {
    state.connecting = false;
  }
  const { cfg } = state;
  if (!cfg.token || (state.ws && state.ws.readyState <= WebSocket.OPEN)) return; // not configured yet: the options page sets it
  const ws = new WebSocket(cfg.daemonURL);
  state.ws = ws;
  ws.onopen = () => {
    ws.send(JSON.stringify({ type: "hello", token: cfg.token, clientId: cfg.clientId, browser: "chromium",
      extension_version: chrome.runtime.getManifest().version, platforms: state.adapters.map((a) => a.platform) }));
  };
  ws.onmessage = (ev) => {
    let m;
    try {
      m = JSON.parse(ev.data);
    } catch {
      return;
    }
    onMessage(m).catch(() => {});
  };
  ws.onclose = (ev) => {
    if (ev.code === 4409) state.held = true; // replaced by a newer connection of this client: step aside
    clearInterval(state.keepalive);
    state.connected = false;
    state.ws = null;
    publish();
    if (!state.held) setTimeout(connect, backoffDelay(state.attempt++));
  };
  ws.onerror = () => {};
}

async function onMessage(m) {
  switch (m.type) {
    case "hello_ok":
      state.connected = true;
      state.attempt = 0;
      clearInterval(state.keepalive);
      state.keepalive = setInterval(() => send({ type: "keepalive", ts: Date.now() }), Math.min(m.keepalive_ms || 20000, 20000));
      break;
    case "state_snapshot":
      state.snapshot = { system: m.system, conversations: m.browser?.automation_conversations || [] };
      break;
    case "keepalive":
      break;
    case "api_request":
      relay(m);
      break;
    case "request_cancel":
      state.aborts.get(m.requestId)?.abort();
      break;
    case "action":
      send({ type: "action_result", actionId: m.actionId, ...(await act(m)) });
      break;
    case "conversation_inject":
      send({ type: "inject_result", inject_id: m.inject_id, ...(await inject(m)) });
      break;
  }
  publish();
}

// relay performs api_request inside the platform's page when one is open
// (its cookies and state apply), else from the service worker.
async function relay(m) {
  const adapter = state.adapters.find((a) => a.platform === m.platform);
  if (!adapter) {
    return send({ type: "api_response", requestId: m.requestId, status: 0, body: "", error: "no adapter for this platform" });
  }
  const path = m.path || (adapter.completionPath ?? "/api/complete");
  const body = m.path ? (m.body === undefined ? undefined : typeof m.body === "string" ? m.body : JSON.stringify(m.body))
    : JSON.stringify({ prompt: m.prompt });
  const init = { method: m.method || (body ? "POST" : "GET"), headers: m.headers || {}, body, credentials: "include" };
  const url = new URL(path, adapter.origin).toString();
  const ctl = new AbortController();
  state.aborts.set(m.requestId, ctl);
  try {
    const resp = await fetch(url, { ...init, signal: ctl.signal });
    const headers = {};
    resp.headers.forEach((v, k) => (headers[k] = v));
    if (m.responseMode !== "sse") {
      send({ type: "api_response", requestId: m.requestId, status: resp.status, headers, body: await resp.text() });
      return;
    }
    send({ type: "stream_open", requestId: m.requestId, status: resp.status, headers });
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = "", seq = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.startsWith("data: ")) send({ type: "stream_event", requestId: m.requestId, seq: ++seq, data: line.slice(6) });
      }
    }
    send({ type: "stream_end", requestId: m.requestId });
  } catch (e) {
    if (ctl.signal.aborted) return; // the daemon cancelled: it knows
    const msg = "the page could not perform the request";
    if (m.responseMode === "sse") send({ type: "stream_error", requestId: m.requestId, code: "fetch_failed", message: msg });
    else send({ type: "api_response", requestId: m.requestId, status: 0, body: "", error: msg });
  } finally {
    state.aborts.delete(m.requestId);
  }
}

async function tabFor(adapter) {
  const tabs = await chrome.tabs.query({ url: new URL(adapter.origin).origin + "/*" });
  return tabs[0];
}

// act answers management actions with a structured result.
async function act(m) {
  const adapter = state.adapters.find((a) => a.platform === m.platform);
  const ok = (result, target) => ({ accepted: true, completed: true, failed: false, result, target, shell_runtime: { tabs: lastTabCount() } });
  switch (m.action) {
    case "plugin_status":
      return ok({ connected: state.connected, platforms: state.adapters.map((a) => a.platform), clientId: state.cfg.clientId });
    case "ws_reconnect": {
      const o = wsReconnectOptions(m.options || {});
      setTimeout(() => reconnectCycle(o), 50);
      return ok({ scheduled: o });
    }
    case "tab_open":
    case "tab_restore": {
      const existing = adapter && (await tabFor(adapter));
      const tab = existing || (await chrome.tabs.create({ url: adapter.origin, active: false }));
      return ok({ opened: !existing }, { platform: m.platform, tabId: tab.id });
    }
    case "tab_focus":
    case "tab_reload": {
      const tab = adapter && (await tabFor(adapter));
      if (!tab) return { accepted: true, completed: false, failed: true, reason: "no tab for " + m.platform };
      if (m.action === "tab_focus") await chrome.tabs.update(tab.id, { active: true });
      else await chrome.tabs.reload(tab.id);
      return ok({}, { platform: m.platform, tabId: tab.id });
    }
    case "request_credentials":
      return ok({ requested: true });
    case "controller_reload":
      setTimeout(() => chrome.runtime.reload(), 200);
      return ok({ reloading: true });
  }
  return { accepted: false, completed: false, failed: true, reason: "unknown action" };
}

// lastTabCount is the tab count as of the previous call (it refreshes in
// the background): good enough for the shell runtime summary, and it keeps
// the action answer from waiting on the tabs API.
let tabsCount = 0;
function lastTabCount() {
  chrome.tabs.query({}).then((t) => (tabsCount = t.length)).catch(() => {});
  return tabsCount;
}

// reconnectCycle drops the socket for disconnectMs, repeatCount times.
async function reconnectCycle(o) {
  for (let i = 0; i < o.repeatCount; i++) {
    state.held = true;
    state.ws?.close(1000, "ws_reconnect");
    await new Promise((r) => setTimeout(r, o.disconnectMs));
    state.held = false;
    state.attempt = 0;
    await connect();
    if (i + 1 < o.repeatCount) await new Promise((r) => setTimeout(r, o.repeatIntervalMs));
  }
}

// inject types text into the conversation's page through its adapter.
async function inject(m) {
  const adapter = state.adapters.find((a) => a.platform === m.platform);
  const tab = adapter && (await tabFor(adapter));
  if (!tab) return { ok: false, error: { code: "no_tab", message: "no open page for this conversation" } };
  const [res] = await chrome.scripting.executeScript({
    target: { tabId: tab.id },
    func: (text, inputSel, sendSel) => {
      const input = document.querySelector(inputSel);
      const btn = document.querySelector(sendSel);
      if (!input || !btn) return { ok: false, code: "input_not_found" };
      if ("value" in input) input.value = text;
      else input.textContent = text;
      input.dispatchEvent(new Event("input", { bubbles: true }));
      btn.click();
      return { ok: true };
    },
    args: [m.text, adapter.inputSelector, adapter.sendSelector],
  });
  const r = res?.result || { ok: false, code: "script_failed" };
  return r.ok ? { ok: true, delivery_ack: { level: 0 } } : { ok: false, error: { code: r.code, message: "the page has no input box" } };
}

chrome.alarms.create("svcd-keepalive", { periodInMinutes: 0.5 });
chrome.alarms.onAlarm.addListener(() => connect());
chrome.runtime.onStartup.addListener(() => connect());
chrome.runtime.onInstalled.addListener(() => connect());
chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && (changes.token || changes.daemonURL)) {
    state.cfg = null;
    state.ws?.close(1000, "configuration changed");
  }
});
connect();
