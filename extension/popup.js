// Shows what the service worker published: connection, client id, the
// system mode and the automation status of each linked conversation.
async function render() {
  const { status } = await chrome.storage.session.get("status");
  const s = status || {};
  const conn = document.getElementById("conn");
  conn.textContent = s.connected ? "connected" : "disconnected";
  conn.className = s.connected ? "ok" : "down";
  document.getElementById("client").textContent = s.clientId || "—";
  document.getElementById("mode").textContent = s.snapshot?.system?.mode || "unknown";
  const idx = await (await fetch(chrome.runtime.getURL("adapters/index.json"))).json();
  document.getElementById("platforms").textContent = idx.map((f) => f.replace(".json", "")).join(", ");
  const t = document.getElementById("convs");
  t.replaceChildren();
  for (const c of s.snapshot?.conversations || []) {
    const tr = document.createElement("tr");
    for (const v of [c.local_conversation_id, c.automation_status, c.pause_reason || ""]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.append(td);
    }
    t.append(tr);
  }
}
render();
chrome.storage.onChanged.addListener(render);
