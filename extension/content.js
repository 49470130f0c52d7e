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
  // data-message-id or a hash of its text.
  let lastUserTyping = 0;
  document.addEventListener('keydown', (e) => { if (e.isTrusted) lastUserTyping = Date.now(); }, true);
  const m = location.pathname.match(/\/c\/([A-Za-z0-9._:-]{1,120})/);
  if (m) {
    const remote = m[1];
    const local = 'conv-' + remote;
    chrome.runtime.sendMessage({ conversation: { kind: 'link', local, remote } });
    let lastText = '';
    let stableSince = 0;
    const sent = new Set();
    setInterval(async () => {
      const ad = (await chrome.runtime.sendMessage({ adapterFor: location.href })) || {};
      const els = document.querySelectorAll(ad.replySelector || '.message.assistant');
      const el = els[els.length - 1];
      if (!el) return;
      const text = el.innerText;
      if (text !== lastText) { lastText = text; stableSince = Date.now(); return; }
      if (Date.now() - stableSince < 800) return;
      let id = el.dataset.messageId;
      if (!id) {
        const d = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
        id = 'h-' + [...new Uint8Array(d)].slice(0, 12).map((x) => x.toString(16).padStart(2, '0')).join('');
      }
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
      el.textContent = `svcd: ${msg.mode || '?'}` + (c.length ? ' · ' + c.map((x) => `${x.local_conversation_id}: ${x.automation_status}${x.pause_reason ? ' (' + x.pause_reason + ')' : ''}`).join(', ') : ' · no automated conversation');
      return false;
    }
    return false;
  });
})();
