import { test } from "node:test";
import assert from "node:assert/strict";
import "../lib/pagerules.js";
import { RESULT_MARKER } from "../lib/loop.js";

const { MARKER, typedInInput, userMessagesToReport, userMessageID } = globalThis.svcdPage;

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
