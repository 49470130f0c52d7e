// The page rules of the content script that need no browser: what counts as
// the user typing, and which user messages of a page are reported. A classic
// script (content scripts cannot import modules): it runs before content.js
// in the same isolated world and leaves its functions on globalThis.svcdPage;
// node's test runner loads it the same way (test/pagerules.test.mjs).
(() => {
  if (globalThis.svcdPage) return; // put in place again by the worker: nothing changed
  // The first line of every report (lib/loop.js RESULT_MARKER).
  const MARKER = '[instr-result] svcd instruction results';

  const norm = (t) => String(t).replace(/\s+/g, ' ').trim();

  // editableTarget: the key went to something one types into (the first
  // element of the event's composed path: the real target, even inside a
  // shadow root). Keys on the page, a button or a link are never typing.
  function editableTarget(path) {
    const t = path && path[0];
    if (!t) return false;
    if (t.isContentEditable) return true;
    const tag = String(t.tagName || '').toUpperCase();
    return tag === 'TEXTAREA' || tag === 'INPUT';
  }

  // typedInInput: a key event counts as the user typing only when it went to
  // an editable element in the platform's input box (the adapter's
  // inputSelector), found on the event's composed path so a box inside a
  // shadow root, or an editable element inside a box that is a wrapper,
  // counts too. Keys elsewhere (scrolling, Escape in a dialog, page
  // shortcuts, another text field) are not typing and do not stop the loop.
  function typedInInput(path, inputSelector) {
    if (typeof inputSelector !== 'string' || inputSelector === '') return false;
    if (!editableTarget(path)) return false;
    for (const el of path || []) {
      if (!el || typeof el.matches !== 'function') continue;
      try {
        if (el.matches(inputSelector)) return true;
      } catch {
        return false; // a selector the browser refuses matches nothing
      }
    }
    return false;
  }

  // userMessagesToReport: of the user message elements of a page ({text},
  // in page order), the indexes of those the user wrote: not a report (it
  // carries the result marker) nor a text this script typed itself
  // (injected holds their normalized texts).
  function userMessagesToReport(messages, injected) {
    const out = [];
    messages.forEach((m, i) => {
      const t = norm(m.text);
      if (t.startsWith(MARKER) || injected.has(t)) return;
      out.push(i);
    });
    return out;
  }

  // hashID names a message without an id of its own by a hash of its text.
  async function hashID(prefix, text) {
    const d = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
    return prefix + [...new Uint8Array(d)].slice(0, 12).map((x) => x.toString(16).padStart(2, '0')).join('');
  }

  // userMessageID: the page's id of a user message, else a hash of its
  // position and text keyed with the worker's random key (sw.js userIdKey):
  // stable over reloads and worker restarts, but no hash of the user's words
  // that anyone could recompute (a short "yes" hashed bare) leaves the browser.
  function userMessageID({ dataId, index, text, key }) {
    if (dataId) return Promise.resolve(dataId);
    return hashID('u-' + index + '-', key + '\n' + text);
  }

  globalThis.svcdPage = Object.freeze({ MARKER, norm, editableTarget, typedInInput, userMessagesToReport, hashID, userMessageID });
})();
