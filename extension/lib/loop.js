// The client loop rules of the instruction protocol (docs/instructions.md):
// at most maxRounds automatic rounds per conversation, a wait before
// injecting, the result marker so the loop never executes its own output,
// user typing stops it at once, three failures in a row stop it with a
// summary.
export const RESULT_MARKER = "[instr-result]";

export class LoopGuard {
  constructor({ maxRounds = 10, waitMs = 2000, maxFailures = 3 } = {}) {
    Object.assign(this, { maxRounds, waitMs, maxFailures });
    this.rounds = 0;
    this.failures = 0;
    this.stopped = "";
  }
  // shouldRun decides on a final AI reply.
  shouldRun(text) {
    if (this.stopped) return false;
    if (text.trimStart().startsWith(RESULT_MARKER)) return false;
    if (!/```instr|~~~instr/.test(text)) return false;
    if (this.rounds >= this.maxRounds) {
      this.stopped = "round limit reached";
      return false;
    }
    this.rounds++;
    return true;
  }
  // record notes a round's outcome; it returns a summary to inject when the
  // loop stops on failures.
  record(ok) {
    this.failures = ok ? 0 : this.failures + 1;
    if (this.failures >= this.maxFailures) {
      this.stopped = "three failures in a row";
      return `${RESULT_MARKER} loop stopped: ${this.failures} rounds in a row failed`;
    }
    return "";
  }
  userTyped() {
    this.stopped = "user typing";
  }
}
