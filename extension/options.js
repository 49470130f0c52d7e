// The daemon address and pairing token live in chrome.storage.local; the
// service worker reconnects when they change. The token is never shown back.
const f = document.getElementById("f");
const { daemonURL } = await chrome.storage.local.get("daemonURL");
document.getElementById("daemonURL").value = daemonURL || "";
f.addEventListener("submit", async (e) => {
  e.preventDefault();
  const set = { daemonURL: document.getElementById("daemonURL").value.trim() };
  const token = document.getElementById("token").value;
  if (token) set.token = token;
  await chrome.storage.local.set(set);
  document.getElementById("token").value = "";
  document.getElementById("saved").textContent = "saved";
});
