// node --test extension/test/ : the pure parts of the extension.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fingerprint, headerNames } from '../lib/fingerprint.js';
import { backoffDelay } from '../lib/backoff.js';
import { withOrigins, platformForURL, cutQuery, PLATFORMS } from '../lib/adapters.js';
import { sseParser } from '../lib/sse.js';
import { newLoop, onReply, onRoundResult, onUserTyping, failureSummary, RESULT_MARKER } from '../lib/loop.js';
import { readFileSync } from 'node:fs';

test('fingerprint matches the documented worked example', async () => {
  const fp = await fingerprint({ 'X-Csrf-Token': 't1', Authorization: 'Bearer abc' }, { sid: 's1' });
  assert.equal(fp, 'sha256:070ef45e300b1d9293f399bd748bdc88646ea28c1e5dd86fc60ddc7327b1d892');
  assert.deepEqual(headerNames({ 'X-Csrf-Token': 't1', Authorization: 'x' }), ['authorization', 'x-csrf-token']);
});

test('fingerprint changes with any value', async () => {
  const a = await fingerprint({ Authorization: 'a' }, {});
  const b = await fingerprint({ Authorization: 'b' }, {});
  assert.notEqual(a, b);
});

test('backoff is capped, jittered and never zero', () => {
  for (let i = 0; i < 40; i++) {
    const lo = backoffDelay(i, { random: () => 0 });
    const hi = backoffDelay(i, { random: () => 0.999999 });
    assert.ok(lo > 0 && hi <= 10000, `attempt ${i}: ${lo}..${hi}`);
    assert.ok(hi >= lo);
  }
  assert.equal(backoffDelay(0, { random: () => 0 }), 125);
  assert.equal(backoffDelay(30, { random: () => 0 }), 5000);
});

test('adapters are data: every platform file parses and names its platform', () => {
  const list = PLATFORMS.map((p) => JSON.parse(readFileSync(new URL(`../adapters/${p}.json`, import.meta.url))));
  list.forEach((a, i) => { assert.equal(a.platform, PLATFORMS[i]); assert.ok(a.origin && a.input && a.lastReply); });
  const o = withOrigins(list, { platform_b: 'http://127.0.0.1:9' });
  assert.equal(platformForURL(o, 'http://127.0.0.1:9/c/x?q=1'), 'platform_b');
  assert.equal(platformForURL(o, 'http://evil.example/'), '');
  assert.equal(platformForURL(o, 'not a url'), '');
  assert.equal(cutQuery('/api/x?token=secret#f'), '/api/x');
});

test('sse parser splits events across chunks', () => {
  const got = [];
  const feed = sseParser((e) => got.push(e));
  feed('event: message\ndata: {"a"');
  feed(':1}\n\ndata: two\r\n\r\n');
  assert.deepEqual(got, [{ event: 'message', data: '{"a":1}' }, { event: 'message', data: 'two' }]);
});

test('loop rules: marker ignored, no instructions ends, round limit stops', () => {
  const l = newLoop({ maxRounds: 2 });
  assert.equal(onReply(l, RESULT_MARKER + '\n-- x --'), 'ignore');
  assert.equal(onReply(l, 'just text'), 'end');
  assert.equal(onReply(l, '```instr\n@svc::status\n```'), 'execute');
  assert.equal(onReply(l, '```instr\n@svc::status\n```'), 'execute');
  assert.equal(onReply(l, '```instr\n@svc::status\n```'), 'stop');
  assert.equal(onReply(l, '```instr\n@svc::status\n```'), 'ignore');
});

test('loop rules: three failed rounds stop with a summary; success resets', () => {
  const l = newLoop();
  assert.equal(onRoundResult(l, false, 'r1'), 'inject');
  assert.equal(onRoundResult(l, true), 'inject');
  assert.equal(onRoundResult(l, false, 'a'), 'inject');
  assert.equal(onRoundResult(l, false, 'b'), 'inject');
  assert.equal(onRoundResult(l, false, 'c'), 'stop_failed');
  assert.equal(failureSummary(l), [RESULT_MARKER, '-- loop stopped --', '失败', 'a', 'b', 'c'].join('\n'));
});

test('loop rules: user typing stops at once', () => {
  const l = newLoop();
  onUserTyping(l);
  assert.equal(onReply(l, '```instr\n@svc::status\n```'), 'ignore');
});
