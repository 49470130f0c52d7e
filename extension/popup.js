// Shows only state, names and fingerprints: never a captured value.
const $ = (id) => document.getElementById(id);
function row(table, cells) {
  const tr = document.createElement('tr');
  for (const t of cells) { const td = document.createElement('td'); td.textContent = t; tr.appendChild(td); }
  table.appendChild(tr);
}

async function render() {
  const { status: s } = await chrome.storage.session.get('status');
  const st = s || { connected: false, captured: {} };
  $('conn').innerHTML = '';
  const c = document.createElement('b');
  c.className = st.connected ? 'ok' : 'bad';
  c.textContent = st.connected ? 'Connected' : 'Disconnected' + (st.lastError ? ': ' + st.lastError : '');
  $('conn').appendChild(c);
  // Conversation reports made while the socket was down wait in the
  // worker's outbox and go out after the next hello (a count, no content).
  $('pending').textContent = st.pending ? `${st.pending} report${st.pending === 1 ? '' : 's'} waiting for the daemon` : '';
  // The mode is the daemon's: while disconnected the last snapshot may be
  // stale, so it is shown only as "last known".
  const mode = (st.snapshot && st.snapshot.system && st.snapshot.system.mode) || '';
  $('mode').textContent = st.connected ? (mode || '?') : (mode ? `unknown (not connected; last known ${mode})` : 'unknown (not connected)');
  $('scopes').textContent = st.connected && Array.isArray(st.scopes) ? 'Scopes: ' + st.scopes.join(', ') : '';
  // One row per platform: what this browser captured (names, fingerprint)
  // and the accounts the daemon keeps for it (labels and counts).
  $('plat').innerHTML = '';
  const captured = st.captured || {};
  const accounts = st.accounts || {};
  for (const p of [...new Set([...Object.keys(captured), ...Object.keys(accounts)])].filter(Boolean).sort()) {
    const v = captured[p] || {};
    const accs = (accounts[p] || []).map((a) => `${a.account || '(default)'} ${a.status}`.trim());
    // The credential headers by name; the other captured names only counted.
    const cred = v.credential_names || v.header_names || [];
    const others = (v.header_names || []).length - cred.length;
    const cells = [p, (cred.join(', ') || '—') + (others > 0 ? ` +${others} other headers` : ''), `${v.cookie_count || 0} cookies`, (v.fingerprint || '').slice(0, 19),
      accs.length ? 'accounts: ' + accs.join('; ') : 'no account at the daemon'];
    row($('plat'), cells);
  }
  $('loops').innerHTML = '';
  for (const [id, l] of Object.entries(st.loops || {}).sort()) {
    row($('loops'), [l.platform, id, l.stopped ? 'stopped: ' + l.stopped : `round ${l.rounds}/${l.maxRounds}`, l.failures ? `${l.failures} failed` : '']);
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
