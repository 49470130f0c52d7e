// The daemon address, the pairing (code, credential or legacy token) and the
// loop's round limit live in chrome.storage.local; the service worker
// reconnects when the address, a code or a token is saved and applies a new
// limit from its next decision. No secret is ever shown back: the page says
// only whether this browser is paired (lib/pairing.js).
import { saveFromOptions, pairingSummary, PAIRING_KEYS } from "./lib/pairing.js";

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

f.addEventListener("submit", async (e) => {
  e.preventDefault();
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
