// Runs inside a platform page (injected on demand by the service worker).
// Fetches here carry the page's own origin and cookies.
(() => {
  if (window.__svcdBridge) return;
  window.__svcdBridge = true;

  chrome.runtime.onConnect.addListener((port) => {
    if (port.name !== 'relay') return;
    const ctl = new AbortController();
    port.onMessage.addListener(async (req) => {
      if (req.cancel) { ctl.abort(); return; }
      const timer = setTimeout(() => ctl.abort(), req.timeoutMs);
      try {
        const r = await fetch(req.path, { method: req.method, headers: req.headers, body: req.body, credentials: 'include', signal: ctl.signal });
        const headers = {};
        r.headers.forEach((v, k) => { headers[k] = v; });
        port.postMessage({ head: true, status: r.status, headers });
        const rd = r.body.getReader();
        const dec = new TextDecoder();
        for (;;) {
          const { value, done } = await rd.read();
          if (done) break;
          port.postMessage({ chunk: dec.decode(value, { stream: true }) });
        }
        port.postMessage({ end: true });
      } catch (e) {
        try { port.postMessage({ error: true, aborted: ctl.signal.aborted }); } catch {}
      } finally { clearTimeout(timer); }
    });
    port.onDisconnect.addListener(() => ctl.abort());
  });

  chrome.runtime.onMessage.addListener((msg, _s, reply) => {
    if (msg.inject) {
      const ad = msg.adapter;
      const box = document.querySelector(ad.input);
      if (!box) { reply({ ok: false, reason: 'input box not found' }); return false; }
      box.focus();
      box.value = msg.text;
      box.dispatchEvent(new Event('input', { bubbles: true }));
      // Level 1: the page's own send request answered. The fake and real
      // pages send through fetch; watch the next response of the send.
      const btn = document.querySelector(ad.send);
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
