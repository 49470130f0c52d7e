// The daemon address, the pairing (code, credential or legacy token) and the
// loop's round limit live in chrome.storage.local; the service worker
// reconnects when the address, a code or a token is saved and applies a new
// limit from its next decision. No secret is ever shown back: the page says
// only whether this browser is paired (lib/pairing.js).
import { saveFromOptions, pairingSummary, PAIRING_KEYS } from "./lib/pairing.js";
import { grantPlan, originInput, originPattern, releasable, daemonPattern, covers, broadGrants } from "./lib/grants.js";
import { withOrigins } from "./lib/pageurl.js";

const f = document.getElementById("f");
const { daemonURL, loop } = await chrome.storage.local.get(["daemonURL", "loop"]);
document.getElementById("daemonURL").value = daemonURL || "";
document.getElementById("maxRounds").value = (loop && loop.maxRounds) || "";

async function showPairing() {
  const stored = await chrome.storage.local.get(PAIRING_KEYS);
  document.getElementById("pairing").textContent = pairingSummary(stored);
  const { status } = await chrome.storage.session.get("status").catch(() => ({}));
  document.getElementById("lastError").textContent = (status && !status.connected && status.lastError) || "";
}
chrome.storage.onChanged.addListener(showPairing);
showPairing();

// What the manifest grants at install (the daemon's loopback address).
const REQUIRED = chrome.runtime.getManifest().host_permissions || [];

f.addEventListener("submit", async (e) => {
  e.preventDefault();
  // A daemon elsewhere than the loopback address the manifest holds needs
  // its origin granted for the worker's /readyz and /v1/browser: asked here,
  // in the click (Chrome shows a prompt only for a user's gesture).
  const dp = daemonPattern(document.getElementById("daemonURL").value.trim());
  if (dp && !REQUIRED.some((r) => covers(r, dp.replace(/\/\*$/, "")))) chrome.permissions.request({ origins: [dp] }).catch(() => {});
  const loopNow = (await chrome.storage.local.get("loop")).loop || {};
  const pair = saveFromOptions({ code: document.getElementById("code").value, token: document.getElementById("token").value });
  const set = { daemonURL: document.getElementById("daemonURL").value.trim(), ...pair.set };
  // Empty means the default (10, as the daemon's instr_max_rounds).
  const rounds = Number(document.getElementById("maxRounds").value);
  set.loop = Number.isInteger(rounds) && rounds >= 1 && rounds <= 100 ? { ...loopNow, maxRounds: rounds } : { ...loopNow, maxRounds: undefined };
  if (pair.remove.length) await chrome.storage.local.remove(pair.remove);
  await chrome.storage.local.set(set);
  document.getElementById("code").value = "";
  document.getElementById("token").value = "";
  document.getElementById("saved").textContent = "saved";
});

// ---- platform sites: the optional host permissions (issue 36) ----
// Each platform's origin (the adapter's, or the one set here) is granted by
// the user with chrome.permissions.request in the click that sets it, and
// given back (chrome.permissions.remove) when it is removed. The worker
// registers its scripts and the header capture on the grant
// (chrome.permissions.onAdded/onRemoved).
const idx = await (await fetch(chrome.runtime.getURL("adapters/index.json"))).json();
const baseAdapters = await Promise.all(idx.map((file) => fetch(chrome.runtime.getURL("adapters/" + file)).then((r) => r.json())));
const rows = document.querySelector("#platforms tbody");
const originError = document.getElementById("originError");

async function current() {
  const { origins = {} } = await chrome.storage.local.get("origins");
  const ads = withOrigins(baseAdapters, origins);
  const perms = await chrome.permissions.getAll();
  return { origins, ads, plan: grantPlan(ads, perms.origins || []) };
}

async function showPlatforms() {
  const { ads, plan } = await current();
  rows.textContent = "";
  for (const a of ads) {
    const granted = plan.granted.some((g) => g.platform === a.platform);
    const tr = document.createElement("tr");
    tr.dataset.platform = a.platform;
    const input = Object.assign(document.createElement("input"), { size: 36, value: a.origin, className: "origin" });
    const access = Object.assign(document.createElement("td"), { className: "access", textContent: granted ? "granted" : "not granted" });
    const grant = Object.assign(document.createElement("button"), { type: "button", className: "grant", textContent: granted ? "Save" : "Grant" });
    const remove = Object.assign(document.createElement("button"), { type: "button", className: "remove", textContent: "Remove", disabled: !granted });
    grant.addEventListener("click", () => grantOrigin(a, input.value));
    remove.addEventListener("click", () => removeOrigin(a));
    const cells = [a.platform, input, access, [grant, " ", remove]].map((c) => {
      if (c instanceof HTMLElement && c.tagName === "TD") return c;
      const td = document.createElement("td");
      td.append(...[].concat(c));
      return td;
    });
    tr.append(...cells);
    rows.append(tr);
  }
  const held = (await chrome.permissions.getAll()).origins || [];
  document.getElementById("broad").hidden = !broadGrants(held).length;
  const { regrant } = await chrome.storage.local.get("regrant");
  const still = (regrant || []).filter((p) => plan.missing.some((m) => m.pattern === p));
  document.getElementById("regrant").hidden = !still.length;
  document.getElementById("regrantList").textContent = still.join(", ");
}

// grantOrigin asks for the typed origin first, in the click: a prompt needs
// the user's gesture, and an await before it would lose it.
function grantOrigin(a, text) {
  const o = originInput(text);
  if (o.error) { originError.textContent = a.platform + ": " + o.error; return; }
  originError.textContent = "";
  chrome.permissions.request({ origins: [o.pattern] }).then(async (ok) => {
    if (!ok) { originError.textContent = a.platform + ": not granted; the site was not saved"; return; }
    const { origins } = await current();
    const old = a.origin;
    const next = { ...origins, [a.platform]: o.origin };
    await chrome.storage.local.set({ origins: next });
    await giveBack(old, withOrigins(baseAdapters, next));
    showPlatforms();
  }, (e) => { originError.textContent = a.platform + ": " + ((e && e.message) || "not granted"); });
}

// removeOrigin gives the platform's site back and drops the override.
async function removeOrigin(a) {
  const { origins } = await current();
  const next = { ...origins };
  delete next[a.platform];
  // Back to the adapter's default site, which is not granted by this.
  const left = withOrigins(baseAdapters, next).map((x) => (x.platform === a.platform ? { ...x, origin: "" } : x));
  await chrome.storage.local.set({ origins: next });
  await giveBack(a.origin, left);
  showPlatforms();
}

// giveBack removes the grant of an origin no platform uses any more.
async function giveBack(origin, ads) {
  const drop = releasable(origin, ads, REQUIRED);
  if (drop.length) await chrome.permissions.remove({ origins: drop }).catch(() => {});
}

// After an update from the version that held <all_urls>: one prompt for
// every origin in use (the worker listed them in "regrant").
document.getElementById("regrantBtn").addEventListener("click", () => {
  const list = document.getElementById("regrantList").textContent.split(", ").filter(Boolean);
  chrome.permissions.request({ origins: list }).then(async (ok) => {
    if (ok) await chrome.storage.local.remove("regrant");
    showPlatforms();
  }, (e) => { originError.textContent = (e && e.message) || "not granted"; });
});

// Site access changed in chrome://extensions fires no permissions event:
// each time this page is shown, the worker reads the grants again.
const recheck = () => chrome.runtime.sendMessage({ grantsChanged: true }).catch(() => {}).finally(showPlatforms);
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") recheck(); });
recheck();
// Narrowing an old every-site grant (kept over the update from <all_urls>):
// given back, then the daemon's loopback address and the platform sites in
// use asked for in one prompt (the loopback address too: Chrome granted it
// only through the old grant, and withholds it once that is given back).
document.getElementById("narrowBtn").addEventListener("click", async () => {
  const { ads, origins } = await current();
  const held = (await chrome.permissions.getAll()).origins || [];
  const keep = [...new Set([...REQUIRED, ...ads.filter((a) => origins[a.platform] || held.some((h) => !broadGrants([h]).length && covers(h, new URL(a.origin).origin))).map((a) => originPattern(a.origin))])].filter(Boolean);
  await chrome.permissions.remove({ origins: broadGrants(held) }).catch(() => {});
  const ok = await chrome.permissions.request({ origins: keep }).catch(() => false);
  originError.textContent = ok ? "" : "not granted: grant each platform site below";
  chrome.runtime.sendMessage({ grantsChanged: true }).catch(() => {});
  showPlatforms();
});

chrome.permissions.onAdded.addListener(showPlatforms);
chrome.permissions.onRemoved.addListener(showPlatforms);
chrome.storage.onChanged.addListener((ch, area) => { if (area === "local" && (ch.origins || ch.regrant)) showPlatforms(); });

// ---- network-level header capture: the optional webRequest (issue 36) ----
// Asked for in the click (Chrome shows a prompt only for a user's gesture),
// given back when switched off. The worker adds its listener while the
// permission is held (chrome.permissions.onAdded/onRemoved). Held, Chromium
// routes every page's requests through the browser process for any
// extension with webRequest: that is the cost the switch says.
const netBox = document.getElementById("networkCapture");
const netState = document.getElementById("networkState");
async function showNetwork() {
  const held = await chrome.permissions.contains({ permissions: ["webRequest"] });
  netBox.checked = held;
  netBox.dataset.held = held ? "1" : "";
  netState.textContent = held ? "on" : "off";
}
netBox.addEventListener("change", () => {
  const on = netBox.checked;
  const p = on ? chrome.permissions.request({ permissions: ["webRequest"] }) : chrome.permissions.remove({ permissions: ["webRequest"] });
  p.then(async (ok) => {
    // The user's choice, kept: an update gives back a webRequest grant
    // inherited from an older version only if the user never chose it.
    if (ok) await chrome.storage.local.set({ networkCapture: on });
    else netState.textContent = on ? "not granted" : "could not be given back";
  }, (e) => { netState.textContent = (e && e.message) || "failed"; }).finally(() => {
    chrome.runtime.sendMessage({ grantsChanged: true }).catch(() => {});
    showNetwork();
  });
});
chrome.permissions.onAdded.addListener(showNetwork);
chrome.permissions.onRemoved.addListener(showNetwork);
showNetwork();
