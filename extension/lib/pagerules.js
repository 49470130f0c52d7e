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

  // userTypingEvent: whether one event is the user typing into the
  // platform's input box. A trusted keydown is, and so is a trusted
  // beforeinput, input or paste with no keydown before it (a paste with the
  // mouse, an input method, dictation, autofill). The extension's own typing
  // never is: it sets the box's value and dispatches a synthetic input event
  // (isTrusted false), and selfTyping is true while it does, so a way of
  // typing that makes trusted events (execCommand) would not count either.
  const TYPING_EVENTS = new Set(['keydown', 'beforeinput', 'input', 'paste']);
  function userTypingEvent({ type, isTrusted, path }, inputSelector, selfTyping) {
    if (!isTrusted || selfTyping || !TYPING_EVENTS.has(type)) return false;
    return typedInInput(path, inputSelector);
  }

  // The daemon's rule for a message id (shared/bridgeproto checkID): 1 to
  // 128 bytes of UTF-8, no space, no ASCII control character, no DEL.
  const MAX_ID_BYTES = 128;
  // daemonAcceptsID mirrors that rule, and also refuses a string that is not
  // well-formed UTF-16 (a lone surrogate): the daemon would take it, but as
  // U+FFFD, so it would not be the id the page has.
  function daemonAcceptsID(id) {
    if (typeof id !== 'string' || id === '' || !id.isWellFormed()) return false;
    if (new TextEncoder().encode(id).length > MAX_ID_BYTES) return false;
    for (const ch of id) {
      const c = ch.codePointAt(0);
      if (c <= 0x20 || c === 0x7f) return false;
    }
    return true;
  }

  // pageMessageID: a message's id as the page gives it (data-message-id)
  // when the daemon accepts it, else a hash of it, so a page whose ids are
  // too long or have spaces still has every message reported (the daemon
  // refuses the message otherwise, and the loop never sees it). The hash
  // is of the page's id only, so a reload names the message the same. key
  // is the worker's key for user messages (as userMessageID) and '' for AI
  // replies, whose names must outlive a browser restart: the daemon never
  // runs a reply's id twice. The "pid~" prefix is none of the extension's
  // other names (h-, u-<i>-); a page id equal to one would have to be this
  // prefix and a SHA-256 of another of the page's ids.
  function pageMessageID(dataId, key = '') {
    if (daemonAcceptsID(dataId)) return Promise.resolve(dataId);
    return hashID('pid~', key + '\n' + dataId);
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

  // userMessageID: the page's id of a user message (pageMessageID), else a
  // hash of its position and text keyed with the worker's random key (sw.js
  // userIdKey): stable over reloads and worker restarts, but no hash of the
  // user's words that anyone could recompute (a short "yes" hashed bare)
  // leaves the browser.
  function userMessageID({ dataId, index, text, key }) {
    if (dataId) return pageMessageID(dataId, key);
    return hashID('u-' + index + '-', key + '\n' + text);
  }

  globalThis.svcdPage = Object.freeze({ MARKER, norm, editableTarget, typedInInput, userTypingEvent, daemonAcceptsID, pageMessageID, userMessagesToReport, hashID, userMessageID });
})();
