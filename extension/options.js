// The token is kept in chrome.storage.local (the browser profile), never shown back.
const $ = (id) => document.getElementById(id);
chrome.storage.local.get(['daemon']).then((s) => { $('daemon').value = s.daemon || ''; });
$('save').onclick = async () => {
  const v = { daemon: $('daemon').value.trim() || 'ws://127.0.0.1:4317/ws/browser' };
  if ($('token').value) v.token = $('token').value;
  await chrome.storage.local.set(v);
  $('token').value = '';
  $('msg').textContent = 'saved';
};
