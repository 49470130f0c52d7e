// Runs inside a platform page whose origin the user granted: registered for
// those origins only (sw.js registerForGrants), injected on demand into one
// open before.
// Fetches here carry the page's own origin and cookies.
(() => {
  if (window.__svcdBridge) return;
  window.__svcdBridge = true;
  // A mark the page's own world can see too: the e2e shows by it that a
  // page outside the granted origins got no content script (issue 36).
  document.documentElement.dataset.svcdBridge = '1';

  // The page's own requests, as the page relay saw them (page-relay.js
  // watchPageRequests: only what is new, never twice), go to the worker,
  // which checks them (lib/pagecapture.js acceptReport) and reports the
  // login to the daemon. What the relay saw before this script ran, it
  // holds until asked.
  window.addEventListener('svcd-capture', (ev) => {
    let r;
    try { r = JSON.parse(ev.detail); } catch { return; }
    chrome.runtime.sendMessage({ pageCapture: r }).catch(() => {});
  });
  window.dispatchEvent(new CustomEvent('svcd-capture-pull'));

  // The fetch itself runs in the page's MAIN world (page-relay.js), so the
  // page's cookies and state apply exactly as for the page's own requests;
  // this isolated script only forwards between the worker and the page. The
  // worker holds one long-lived port per tab ("svcd-relays") and names each
  // request by a nonce: requests, cancels and answers of every relay of the
  // tab go over that port, not a port (and a connect) per request.
  chrome.runtime.onConnect.addListener((port) => {
    if (port.name !== 'svcd-relays') return;
    // No page relay of this version in the document yet: hang up, the
    // worker injects it (page-relay.js: the CustomEvents between us).
    if (document.documentElement.dataset.svcdPageRelay !== '2') { port.disconnect(); return; }
    const mine = new Set(); // nonces of this port's running requests
    const toPage = (n, req) => window.dispatchEvent(new CustomEvent('svcd-relay', { detail: JSON.stringify({ n, req }) }));
    const onReply = (ev) => {
      let r;
      try { r = JSON.parse(ev.detail); } catch { return; }
      if (!r || !mine.has(r.n) || !r.msg) return;
      if (r.msg.end || r.msg.error) mine.delete(r.n);
      try { port.postMessage(r); } catch {}
    };
    window.addEventListener('svcd-relay-reply', onReply);
    port.onMessage.addListener(({ n, req }) => {
      if (!req.cancel) mine.add(n);
      toPage(n, req);
    });
    port.onDisconnect.addListener(() => {
      for (const n of mine) toPage(n, { cancel: true });
      mine.clear();
      window.removeEventListener('svcd-relay-reply', onReply);
    });
  });

  // Conversation reports: the conversation id from the URL (/c/<id>), the
  // last reply once it stopped changing (final, not a partial), its id from
  // data-message-id (a hash of it when the daemon would refuse it) or a hash
  // of its text; the messages the user sent (not the texts the extension
  // typed itself), those already in the page when this script attached
  // included; and the user typing (or pasting) into the platform's input
  // box, which stops the instruction loop at once (lib/convloop.js in the
  // service worker). The rules that need no browser are lib/pagerules.js.
  const { norm, editableTarget, userTypingEvent, userMessagesToReport, hashID, pageMessageID, userMessageID } = globalThis.svcdPage;
  const injected = new Set(); // normalized texts this script typed into the page
  // The platform's adapter (input, reply and user message selectors), asked
  // of the worker once per page and again at every conversation tick.
  let adapterAsked = null;
  const adapter = (fresh) => {
    if (fresh || !adapterAsked) adapterAsked = chrome.runtime.sendMessage({ adapterFor: location.href }).then((a) => a || {}, () => ({}));
    return adapterAsked;
  };
  let lastUserTyping = 0;
  const m = location.pathname.match(/\/c\/([A-Za-z0-9._:-]{1,120})/);
  const conv = m ? { local: 'conv-' + m[1], remote: m[1] } : null;
  let typingSent = 0;
  // Above zero while this script types into the page itself: what that
  // causes is never the user typing (pagerules.js userTypingEvent).
  let selfTyping = 0;
  const onTyping = (e) => {
    // Only an event in the input box is the user typing: the path and
    // whether this script caused it are taken now, the adapter (a cached
    // answer after the first event) decides. An event not in a text field
    // at all asks the worker nothing.
    const path = e.composedPath();
    const self = selfTyping > 0;
    if (!e.isTrusted || self || !editableTarget(path)) return;
    const at = Date.now();
    adapter(false).then((ad) => {
      if (!userTypingEvent({ type: e.type, isTrusted: e.isTrusted, path }, ad.inputSelector, self)) return;
      lastUserTyping = Math.max(lastUserTyping, at);
      // One notice per half second is enough: the first one stops the loop.
      if (conv && at - typingSent > 500) {
        typingSent = at;
        chrome.runtime.sendMessage({ conversation: { kind: 'typing', ...conv } }).catch(() => {});
      }
    });
  };
  // A key, or text that came without one (a paste with the mouse, an input
  // method, dictation): beforeinput and input follow every change of the box.
  for (const type of ['keydown', 'beforeinput', 'input', 'paste']) document.addEventListener(type, onTyping, true);
  if (conv) {
    const { local, remote } = conv;
    chrome.runtime.sendMessage({ conversation: { kind: 'link', local, remote } });
    // What the extension typed into this conversation before this page
    // loaded (a renewal text shows as a user message after a reload) is not
    // the user's; the key names user messages without an id of their own.
    const typedBefore = chrome.runtime.sendMessage({ typedIn: local }).then((l) => { for (const t of l || []) injected.add(norm(t)); }, () => {});
    let keyAsked = null;
    const userKey = () => (keyAsked ||= chrome.runtime.sendMessage({ userIdKey: true }).then((k) => k || '', () => '').then((k) => { if (!k) keyAsked = null; return k; }));
    let lastText = '';
    let stableSince = 0;
    const sent = new Set();
    // Every user message element is looked at once per page: those new since
    // the last tick (all of them at the first) go to the worker by id, in
    // page order; the worker reports the ids it never saw (a reload shows
    // the same ids again: it reports none of them twice).
    const userSeen = new WeakSet();
    const users = async (ad) => {
      const key = await userKey();
      if (!key) return; // the worker did not answer: next tick
      await typedBefore;
      const fresh = [];
      [...document.querySelectorAll(ad.userSelector || '.message.user')].forEach((el, i) => {
        // A bubble still without its text is looked at again next tick: its
        // id may be the hash of the text.
        const text = el.innerText;
        if (userSeen.has(el) || (!el.dataset.messageId && !text.trim())) return;
        userSeen.add(el);
        fresh.push({ el, i, text });
      });
      const ids = [];
      for (const k of userMessagesToReport(fresh, injected)) {
        const { el, i, text } = fresh[k];
        ids.push(await userMessageID({ dataId: el.dataset.messageId, index: i, text, key }));
      }
      if (ids.length) chrome.runtime.sendMessage({ conversation: { kind: 'users', local, remote, ids } });
    };
    const reply = async (ad) => {
      const els = document.querySelectorAll(ad.replySelector || '.message.assistant');
      const el = els[els.length - 1];
      if (!el) return;
      const text = el.innerText;
      if (text !== lastText) { lastText = text; stableSince = Date.now(); return; }
      if (Date.now() - stableSince < 800) return;
      // The page's id if the daemon takes it as it is, else a hash of it.
      const pageId = el.dataset.messageId;
      const id = pageId ? await pageMessageID(pageId) : await hashID('h-', text);
      if (sent.has(id)) return;
      sent.add(id);
      chrome.runtime.sendMessage({ conversation: { kind: 'message', local, remote, message_id: id, text } });
    };
    // One tick at a time, users before the reply: the worker hears the
    // page's messages in page order.
    let busy = false;
    setInterval(async () => {
      if (busy) return;
      busy = true;
      try {
        const ad = await adapter(true);
        await users(ad);
        await reply(ad);
      } finally { busy = false; }
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
      selfTyping++;
      try {
        box.focus();
        box.value = msg.text;
        box.dispatchEvent(new Event('input', { bubbles: true }));
      } finally { selfTyping--; }
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
