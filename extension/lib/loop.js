// The client loop rules of the instruction protocol (docs/instructions.md,
// "Client loop"), the same as shared/instrloop: at most maxRounds automatic
// rounds per conversation, a wait before injecting, the result marker so the
// loop never executes its own output, user typing stops it at once, three
// failed rounds in a row stop it with an error summary. A message the user
// sends starts a new loop (the daemon resets its round count on it too).
//
// On live ingest the daemon executes and the extension only sees the reply
// and the report, so a round is counted when the extension reports a reply
// with instructions, and a round failed when its report holds a failed
// section or the report could not be typed into the page.

// RESULT_MARKER is the first line of every report (shared/instr.ResultMarker).
export const RESULT_MARKER = "[instr-result] svcd instruction results";
export const FAILED = "失败";

// Stop reasons, as shown in the popup and the overlay.
export const STOP_ROUNDS = "round limit reached";
export const STOP_TYPING = "user typing";
export const STOP_FAILURES = "three failures in a row";

export function isReport(text) {
  return String(text).includes(RESULT_MARKER);
}

export function hasInstructions(text) {
  return /(^|\n)[ \t]*(```|~~~)instr\b/.test(String(text));
}

// reportFailed: a section of the report says 失败 (shared/instr.Render puts
// it alone on the line after the section's label).
export function reportFailed(text) {
  return new RegExp("^" + FAILED + "$", "m").test(String(text));
}

export class LoopGuard {
  constructor({ maxRounds = 10, waitMs = 2000, maxFailures = 3 } = {}, saved = null) {
    Object.assign(this, { maxRounds, waitMs, maxFailures });
    this.rounds = 0;
    this.failures = 0;
    this.notes = [];
    this.stopped = "";
    this.skipped = 0; // replies with instructions not run because the loop stopped
    this.epoch = 0; // counts the user's messages: a report of an older loop is never typed
    this.seen = []; // ids of the latest replies decided on: a reload's repeat counts no round
    if (saved) for (const k of ["rounds", "failures", "notes", "stopped", "skipped", "epoch", "seen"]) if (k in saved) this[k] = saved[k];
  }

  // repeat notes a reply's id; true when it was decided on before (a page
  // reload shows the last reply again: the daemon refuses it as a repeat,
  // and it must not count a round here either).
  repeat(id) {
    if (this.seen.includes(id)) return true;
    this.seen = [...this.seen.slice(-49), id];
    return false;
  }

  // unseenUsers takes the ids of the user messages a page shows, in page
  // order, and returns those never decided on, noting them as repeat does.
  // Only the ids after the last one seen count: the page's history before a
  // message reported earlier was there when it was reported, so a reload of
  // a long conversation reports nothing again even once its oldest ids left
  // the window of remembered ids.
  unseenUsers(ids) {
    let from = 0;
    ids.forEach((id, i) => { if (this.seen.includes(id)) from = i + 1; });
    const fresh = [...new Set(ids.slice(from))].filter((id) => !this.seen.includes(id));
    for (const id of fresh) this.repeat(id);
    return fresh;
  }

  // state is what survives a service worker restart and what the popup shows.
  state() {
    return { rounds: this.rounds, failures: this.failures, notes: this.notes, stopped: this.stopped, skipped: this.skipped, epoch: this.epoch, seen: this.seen, maxRounds: this.maxRounds };
  }

  // shouldRun decides on a final AI reply: true counts one round and the
  // reply may be reported for execution.
  shouldRun(text) {
    if (isReport(text)) return false;
    if (this.stopped) {
      if (hasInstructions(text)) this.skipped++;
      return false;
    }
    if (!hasInstructions(text)) {
      // The AI is done: this loop ends, the next reply with instructions
      // starts a fresh one (the daemon resets its count on it as well).
      this.rounds = 0;
      this.failures = 0;
      this.notes = [];
      return false;
    }
    if (this.rounds >= this.maxRounds) {
      this.stopped = STOP_ROUNDS;
      this.skipped++;
      return false;
    }
    this.rounds++;
    return true;
  }

  // record notes a round's outcome; it returns the error summary to inject
  // (instead of the round's report) when the loop stops on failures.
  record(ok, note = "") {
    if (ok) {
      this.failures = 0;
      this.notes = [];
      return "";
    }
    this.failures++;
    this.notes.push(`round ${this.rounds}: ${note || "failed"}`);
    if (this.failures < this.maxFailures) return "";
    this.stopped = STOP_FAILURES;
    return `${RESULT_MARKER}\n-- loop stopped --\n${FAILED}\n` +
      `${this.failures} consecutive rounds failed; automatic execution stopped until the user writes again.\n` +
      this.notes.join("\n") + "\n";
  }

  userTyped() {
    this.stopped = STOP_TYPING;
  }

  // userMessage: the user wrote; a new loop starts (skipped keeps counting).
  userMessage() {
    this.epoch++;
    this.rounds = 0;
    this.failures = 0;
    this.notes = [];
    this.stopped = "";
  }
}

// firstFailure is one line for the summary, as shared/instrloop writes it:
// the failed section's label and the first line of the daemon's error.
export function firstFailure(report) {
  const lines = String(report).split("\n");
  for (let i = 1; i < lines.length; i++) {
    if (lines[i] === FAILED) return lines[i - 1].replace(/^[- ]+|[- ]+$/g, "") + ": " + (lines[i + 1] || "");
  }
  return "failed";
}
