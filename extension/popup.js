// Shows only state, names and fingerprints: never a captured value.
const $ = (id) => document.getElementById(id);
async function render() {
  const { status: s } = await chrome.storage.session.get('status');
  const st = s || { connected: false, captured: {} };
  $('conn').innerHTML = '';
  const c = document.createElement('b');
  c.className = st.connected ? 'ok' : 'bad';
  c.textContent = st.connected ? 'Connected' : 'Disconnected' + (st.lastError ? ': ' + st.lastError : '');
  $('conn').appendChild(c);
  $('mode').textContent = (st.snapshot && st.snapshot.system && st.snapshot.system.mode) || '?';
  $('plat').innerHTML = '';
  for (const [p, v] of Object.entries(st.captured || {})) {
    const tr = document.createElement('tr');
    for (const t of [p, (v.header_names || []).join(', ') || '—', `${v.cookie_count} cookies`, (v.fingerprint || '').slice(0, 19)]) {
      const td = document.createElement('td'); td.textContent = t; tr.appendChild(td);
    }
    $('plat').appendChild(tr);
  }
  $('convs').innerHTML = '';
  for (const cv of (st.snapshot && st.snapshot.browser && st.snapshot.browser.automation_conversations) || []) {
    const li = document.createElement('li');
    li.textContent = `${cv.platform} ${cv.local_conversation_id}: ${cv.automation_status}`;
    $('convs').appendChild(li);
  }
}
$('reconnect').onclick = () => chrome.runtime.sendMessage({ reconnect: true });
$('pause').onclick = () => chrome.runtime.sendMessage({ modeAction: 'pause' });
$('resume').onclick = () => chrome.runtime.sendMessage({ modeAction: 'resume' });
chrome.storage.onChanged.addListener(render);
render();
