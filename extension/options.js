// The daemon address, pairing token and the loop's round limit live in
// chrome.storage.local; the service worker reconnects when the address or
// token change and applies a new limit from its next decision. The token is
// never shown back.
const f = document.getElementById("f");
const { daemonURL, loop } = await chrome.storage.local.get(["daemonURL", "loop"]);
document.getElementById("daemonURL").value = daemonURL || "";
document.getElementById("maxRounds").value = (loop && loop.maxRounds) || "";
f.addEventListener("submit", async (e) => {
  e.preventDefault();
  const set = { daemonURL: document.getElementById("daemonURL").value.trim() };
  const token = document.getElementById("token").value;
  if (token) set.token = token;
  // Empty means the default (10, as the daemon's instr_max_rounds).
  const rounds = Number(document.getElementById("maxRounds").value);
  set.loop = Number.isInteger(rounds) && rounds >= 1 && rounds <= 100 ? { ...(loop || {}), maxRounds: rounds } : { ...(loop || {}), maxRounds: undefined };
  await chrome.storage.local.set(set);
  document.getElementById("token").value = "";
  document.getElementById("saved").textContent = "saved";
});
