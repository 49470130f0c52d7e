import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import "../lib/pagerules.js";
import { RESULT_MARKER } from "../lib/loop.js";

const { MARKER, typedInInput, userTypingEvent, daemonAcceptsID, pageMessageID, userMessagesToReport, hashID, userMessageID } = globalThis.svcdPage;

// el is an element of an event's composed path as far as the rule looks at
// it: what it matches (a fake of Element.matches over plain selectors).
const el = (...selectors) => ({ matches: (s) => selectors.includes(s), tagName: selectors[0].split(/[#.[]/)[0].toUpperCase() });
const adapter = { inputSelector: "textarea#prompt" };

test("the page script's marker is the loop's", () => {
  assert.equal(MARKER, RESULT_MARKER);
});

test("only keys in the platform's input box count as typing", () => {
  const box = el("textarea#prompt");
  // Typing in the box, or in an element inside it (an editable div's child).
  assert.equal(typedInInput([box, el("form"), el("body")], adapter.inputSelector), true);
  assert.equal(typedInInput([{ ...el("span"), isContentEditable: true }, box, el("body")], adapter.inputSelector), true);
  const editable = { ...el("div"), isContentEditable: true };
  assert.equal(typedInInput([editable, el("div#composer")], "div#composer"), true);
  // Scrolling the page, Escape in a dialog, a shortcut on a button: not typing.
  assert.equal(typedInInput([el("button#send"), el("div#composer")], "div#composer"), false);
  assert.equal(typedInInput([el("input#search"), el("header")], adapter.inputSelector), false);
  assert.equal(typedInInput([el("body"), el("html")], adapter.inputSelector), false);
  assert.equal(typedInInput([el("button"), el("dialog"), el("body")], adapter.inputSelector), false);
  assert.equal(typedInInput([window_(), document_()], adapter.inputSelector), false);
  // No adapter, no selector, or one the browser refuses: nothing is typing.
  assert.equal(typedInInput([box], undefined), false);
  assert.equal(typedInInput([box], ""), false);
  const refuses = { tagName: "TEXTAREA", matches: () => { throw new SyntaxError("bad selector"); } };
  assert.equal(typedInInput([refuses, box], "textarea#prompt"), false);
  assert.equal(typedInInput(undefined, adapter.inputSelector), false);
});

// The window and the document end a composed path; neither has matches().
function window_() { return {}; }
function document_() { return { nodeType: 9 }; }

test("reports and texts the extension typed are not user messages", () => {
  const injected = new Set(["please continue the renewal"]);
  const msgs = [
    { text: "what is the status?" },
    { text: `${RESULT_MARKER}\n-- @svc::status --\n成功` },
    { text: "please   continue\nthe renewal " },
    { text: "thanks" },
  ];
  assert.deepEqual(userMessagesToReport(msgs, injected), [0, 3]);
  assert.deepEqual(userMessagesToReport([], injected), []);
});

test("a user message without an id of its own is named by a keyed hash", async () => {
  const name = (over) => userMessageID({ dataId: undefined, index: 2, text: "yes", key: "k1", ...over });
  // The page's own id wins.
  assert.equal(await name({ dataId: "msg-9" }), "msg-9");
  // The same message in a reloaded page gets the same name.
  const id = await name();
  assert.match(id, /^u-2-[0-9a-f]{24}$/);
  assert.equal(await name(), id);
  // Position, text and key all make it: without the key, "yes" would be a
  // hash anyone can compute.
  assert.notEqual(await name({ index: 3 }), id);
  assert.notEqual(await name({ text: "no" }), id);
  assert.notEqual(await name({ key: "k2" }), id);
  assert.ok(!id.includes("yes"));
});

test("typing is a trusted key, paste or input in the box the extension did not cause", () => {
  const box = el("textarea#prompt");
  const ev = (type, over) => ({ type, isTrusted: true, path: [box, el("form"), el("body")], ...over });
  const sel = adapter.inputSelector;
  // A key, and text that came without one: a paste with the mouse, an
  // input method (beforeinput and input, no keydown).
  for (const type of ["keydown", "beforeinput", "input", "paste"]) assert.equal(userTypingEvent(ev(type), sel, false), true, type);
  // The extension's own typing: a synthetic input event (isTrusted false),
  // and anything while it types (selfTyping), trusted or not.
  assert.equal(userTypingEvent(ev("input", { isTrusted: false }), sel, false), false);
  assert.equal(userTypingEvent(ev("input"), sel, true), false);
  assert.equal(userTypingEvent(ev("beforeinput"), sel, true), false);
  // A page script's events are not trusted either.
  assert.equal(userTypingEvent(ev("paste", { isTrusted: false }), sel, false), false);
  // Other events, or typing outside the input box, are not typing.
  for (const type of ["keyup", "focus", "change", "compositionend", "click"]) assert.equal(userTypingEvent(ev(type), sel, false), false, type);
  assert.equal(userTypingEvent(ev("input", { path: [el("input#search"), el("header")] }), sel, false), false);
  assert.equal(userTypingEvent(ev("paste", { path: [el("body"), el("html")] }), sel, false), false);
  assert.equal(userTypingEvent(ev("input"), undefined, false), false);
});

// The table the Go side checks too (shared/bridgeproto message_id_table_test.go).
const idTable = JSON.parse(readFileSync(new URL("../../shared/bridgeproto/testdata/message_ids.json", import.meta.url), "utf8"));

test("the extension's rule for an id is the daemon's (the shared table)", () => {
  assert.ok(idTable.length >= 10);
  for (const { name, id, accepted } of idTable) assert.equal(daemonAcceptsID(id), accepted, name);
  // Not strings, empty, or not well-formed UTF-16 (the daemon would see
  // U+FFFD instead of the lone surrogate: not the page's id).
  for (const id of [undefined, null, 42, "", "m\ud8001", "m\udc00"]) assert.equal(daemonAcceptsID(id), false, String(id));
  assert.equal(daemonAcceptsID("m\ud83d\ude001"), true);
});

test("a page id the daemon refuses is named by a stable hash, one it accepts is kept", async () => {
  for (const { name, id, accepted } of idTable) {
    const got = await pageMessageID(id);
    if (accepted) { assert.equal(got, id, name); continue; }
    assert.match(got, /^pid~[0-9a-f]{24}$/, name);
    assert.equal(daemonAcceptsID(got), true, name);
    // A reload names it the same.
    assert.equal(await pageMessageID(id), got, name);
  }
  const long = "x ".repeat(150);
  assert.notEqual(await pageMessageID(long), await pageMessageID(long + "y"));
  // None of the extension's other names: a reply's text hash (h-) or a user
  // message's (u-<i>-) of the same string.
  assert.notEqual(await pageMessageID(long), await hashID("h-", long));
  // User messages: keyed with the worker's key, as their hashes are.
  const user = (key) => userMessageID({ dataId: long, index: 0, text: "yes", key });
  assert.match(await user("k1"), /^pid~[0-9a-f]{24}$/);
  assert.equal(await user("k1"), await user("k1"));
  assert.notEqual(await user("k1"), await user("k2"));
  assert.notEqual(await user("k1"), await pageMessageID(long));
  assert.equal(await userMessageID({ dataId: "msg 9", index: 0, text: "", key: "k1" }), await pageMessageID("msg 9", "k1"));
  assert.equal(await userMessageID({ dataId: "msg-9", index: 0, text: "", key: "k1" }), "msg-9");
});
