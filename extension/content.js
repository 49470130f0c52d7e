// Runs inside a platform page (injected on demand by the service worker).
// Fetches here carry the page's own origin and cookies.
(() => {
  if (window.__svcdBridge) return;
  window.__svcdBridge = true;

  // The fetch itself runs in the page's MAIN world (pageRelay, injected by the
  // service worker), so the page's cookies and state apply exactly as for the
  // page's own requests; this isolated script only forwards between the
  // worker's port and the page by a per-request nonce.
  chrome.runtime.onConnect.addListener((port) => {
    if (!port.name.startsWith('relay:')) return;
    // No page relay in this document yet: hang up, the worker injects it.
    if (!document.documentElement.dataset.svcdPageRelay) { port.disconnect(); return; }
    const nonce = port.name.slice(6);
    const onWin = (ev) => {
      if (ev.source !== window || !ev.data || ev.data.svcdRelayReply !== nonce) return;
      try { port.postMessage(ev.data.msg); } catch {}
    };
    window.addEventListener('message', onWin);
    port.onMessage.addListener((req) => window.postMessage({ svcdRelay: nonce, req }, '*'));
    port.onDisconnect.addListener(() => { window.postMessage({ svcdRelay: nonce, req: { cancel: true } }, '*'); window.removeEventListener('message', onWin); });
  });

  // Conversation reports: the conversation id from the URL (/c/<id>), the
  // last reply once it stopped changing (final, not a partial), its id from
  // data-message-id or a hash of its text; the messages the user sends (not
  // the texts the extension typed itself); and the user typing, which stops
  // the instruction loop at once (lib/convloop.js in the service worker).
  // A classic content script cannot import lib/loop.js: its RESULT_MARKER.
  const MARKER = '[instr-result] svcd instruction results';
  const injected = new Set(); // normalized texts this script typed into the page
  const norm = (t) => String(t).replace(/\s+/g, ' ').trim();
  const hashID = async (prefix, text) => {
    const d = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
    return prefix + [...new Uint8Array(d)].slice(0, 12).map((x) => x.toString(16).padStart(2, '0')).join('');
  };
  let lastUserTyping = 0;
  const m = location.pathname.match(/\/c\/([A-Za-z0-9._:-]{1,120})/);
  const conv = m ? { local: 'conv-' + m[1], remote: m[1] } : null;
  let typingSent = 0;
  document.addEventListener('keydown', (e) => {
    if (!e.isTrusted) return;
    lastUserTyping = Date.now();
    // One notice per half second is enough: the first one stops the loop.
    if (conv && lastUserTyping - typingSent > 500) {
      typingSent = lastUserTyping;
      chrome.runtime.sendMessage({ conversation: { kind: 'typing', ...conv } }).catch(() => {});
    }
  }, true);
  if (conv) {
    const { local, remote } = conv;
    chrome.runtime.sendMessage({ conversation: { kind: 'link', local, remote } });
    let lastText = '';
    let stableSince = 0;
    const sent = new Set();
    // User messages already in the page at load were sent before anyone
    // watched: only the elements that appear later are reported, each once.
    const userSeen = new WeakSet();
    let firstTick = true;
    setInterval(async () => {
      const ad = (await chrome.runtime.sendMessage({ adapterFor: location.href })) || {};
      const users = [...document.querySelectorAll(ad.userSelector || '.message.user')];
      for (let i = 0; i < users.length; i++) {
        const el = users[i];
        if (userSeen.has(el)) continue;
        userSeen.add(el);
        const t = norm(el.innerText);
        if (firstTick || t.startsWith(MARKER) || injected.has(t)) continue;
        const id = el.dataset.messageId || await hashID('u-' + i + '-', el.innerText);
        chrome.runtime.sendMessage({ conversation: { kind: 'user', local, remote, message_id: id } });
      }
      firstTick = false;
      const els = document.querySelectorAll(ad.replySelector || '.message.assistant');
      const el = els[els.length - 1];
      if (!el) return;
      const text = el.innerText;
      if (text !== lastText) { lastText = text; stableSince = Date.now(); return; }
      if (Date.now() - stableSince < 800) return;
      const id = el.dataset.messageId || await hashID('h-', text);
      if (sent.has(id)) return;
      sent.add(id);
      chrome.runtime.sendMessage({ conversation: { kind: 'message', local, remote, message_id: id, text } });
    }, 300);
  }

  chrome.runtime.onMessage.addListener((msg, _s, reply) => {
    if (msg.inject) {
      const ad = msg.adapter;
      // The user typing stops the loop: nothing is injected over their text.
      if (Date.now() - lastUserTyping < (msg.waitMs || 2000) + 500) { reply({ ok: false, reason: 'the user is typing', code: 'user_typing' }); return false; }
      const box = document.querySelector(ad.inputSelector);
      if (!box) { reply({ ok: false, reason: 'input box not found' }); return false; }
      injected.add(norm(msg.text));
      box.focus();
      box.value = msg.text;
      box.dispatchEvent(new Event('input', { bubbles: true }));
      // Level 1: the page's own send request answered. The fake and real
      // pages send through fetch; watch the next response of the send.
      const btn = document.querySelector(ad.sendSelector);
      window.__svcdLastSend = null;
      if (btn) btn.click(); else box.form && box.form.requestSubmit();
      let n = 0;
      const t = setInterval(() => {
        const s = document.documentElement.dataset.svcdSendStatus;
        if (s || ++n > 50) { clearInterval(t); reply({ ok: true, status: s ? Number(s) : 0 }); delete document.documentElement.dataset.svcdSendStatus; }
      }, 100);
      return true;
    }
    if (msg.overlay) {
      let el = document.getElementById('svcd-overlay');
      if (!el) {
        el = document.createElement('div');
        el.id = 'svcd-overlay';
        el.style.cssText = 'position:fixed;right:8px;bottom:8px;z-index:2147483647;background:#222;color:#fff;font:12px sans-serif;padding:6px 10px;border-radius:6px;opacity:.9';
        document.documentElement.appendChild(el);
      }
      const c = msg.conversations;
      const loops = (msg.loops || []).map((l) => `loop ${l.local_conversation_id}: ` + (l.stopped ? `stopped (${l.stopped})` : `round ${l.rounds}/${l.maxRounds}`));
      el.textContent = `svcd: ${msg.mode || '?'}` + (c.length ? ' · ' + c.map((x) => `${x.local_conversation_id}: ${x.automation_status}${x.pause_reason ? ' (' + x.pause_reason + ')' : ''}`).join(', ') : ' · no automated conversation') +
        (loops.length ? ' · ' + loops.join(', ') : '');
      return false;
    }
    return false;
  });
})();
