// The client loop rules of the instruction protocol (docs/instructions.md
// "Client loop"), as pure decisions so node can test them. The worker feeds
// events in and acts on the returned step.
export const RESULT_MARKER = '[instr-result] svcd instruction results';
export const LOOP_DEFAULTS = { maxRounds: 10, delayMs: 2000, maxFailures: 3 };

export function newLoop(cfg = {}) {
  return { cfg: { ...LOOP_DEFAULTS, ...cfg }, rounds: 0, failures: 0, failed: [], stopped: '' };
}

export function hasInstructions(text) {
  return /```instr\b/.test(text) || /@svc::/.test(text);
}

// onReply decides what a final AI reply does: 'ignore' (our own report),
// 'end' (no instructions), 'stop' (round limit), or 'execute'.
export function onReply(loop, text) {
  if (loop.stopped) return 'ignore';
  if (String(text).includes(RESULT_MARKER)) return 'ignore';
  if (!hasInstructions(text)) { loop.rounds = 0; return 'end'; }
  if (loop.rounds >= loop.cfg.maxRounds) { loop.stopped = 'round_limit_reached'; return 'stop'; }
  loop.rounds++;
  return 'execute';
}

// onRoundResult records a round; it answers 'inject' (wait delayMs, then type
// the report) or 'stop_failed' (inject the error summary, loop over).
export function onRoundResult(loop, ok, summary = '') {
  if (ok) { loop.failures = 0; loop.failed = []; return 'inject'; }
  loop.failures++;
  loop.failed.push(summary || 'round failed');
  if (loop.failures >= loop.cfg.maxFailures) { loop.stopped = 'too_many_failures'; return 'stop_failed'; }
  return 'inject';
}

// onUserTyping stops the loop at once: nothing more is injected.
export function onUserTyping(loop) {
  loop.stopped = 'user_typing';
  loop.rounds = 0;
}

export function failureSummary(loop) {
  return [RESULT_MARKER, '-- loop stopped --', '失败', ...loop.failed].join('\n');
}
