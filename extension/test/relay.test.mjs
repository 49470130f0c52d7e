// node --test extension/test/ : the service worker's pure helpers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { withOrigins, platformForURL, platformForOrigin, cutQuery } from '../lib/pageurl.js';
import { sseParser } from '../lib/sse.js';

test('platformForURL follows the origin overrides', () => {
  const idx = JSON.parse(readFileSync(new URL('../adapters/index.json', import.meta.url)));
  const list = idx.map((f) => JSON.parse(readFileSync(new URL('../adapters/' + f, import.meta.url))));
  const o = withOrigins(list, { platform_b: 'http://127.0.0.1:9' });
  assert.equal(platformForURL(o, 'http://127.0.0.1:9/c/x?q=1'), 'platform_b');
  assert.equal(platformForURL(o, 'https://chat.platform-a.example/c/1'), 'platform_a');
  assert.equal(platformForURL(o, 'http://evil.example/'), '');
  assert.equal(platformForURL(o, 'not a url'), '');
  assert.equal(cutQuery('/api/x?token=secret#f'), '/api/x');
});

test('platformForURL: origins parsed once per list, a new list answers anew, a bad origin matches nothing', () => {
  const list = [{ platform: 'platform_a', origin: 'not an origin' }, { platform: 'platform_b', origin: 'http://127.0.0.1:9' }];
  assert.equal(platformForURL(list, 'http://127.0.0.1:9/x'), 'platform_b');
  assert.equal(platformForURL(list, 'http://127.0.0.1:9/y'), 'platform_b'); // the cached origins
  assert.equal(platformForURL(list, 'null'), '');
  assert.equal(platformForURL(list, 'about:blank'), ''); // origin "null" is no adapter's
  const moved = withOrigins(list, { platform_a: 'http://127.0.0.1:9' });
  assert.equal(platformForURL(moved, 'http://127.0.0.1:9/x'), 'platform_a'); // first match, as before
  assert.equal(platformForURL(list, 'http://127.0.0.1:9/x'), 'platform_b'); // the old list keeps its answer
  assert.equal(platformForOrigin(list, 'http://127.0.0.1:9'), 'platform_b');
  assert.equal(platformForOrigin(list, 'http://127.0.0.1:10'), '');
});

test('sse parser splits events across chunks', () => {
  const got = [];
  const feed = sseParser((e) => got.push(e));
  feed('event: message\ndata: {"a"');
  feed(':1}\n\ndata: two\r\n\r\n');
  assert.deepEqual(got, [{ event: 'message', data: '{"a":1}' }, { event: 'message', data: 'two' }]);
});

test('sse parser: a burst of events in one chunk, CRLF, no space after the colon', () => {
  const got = [];
  const feed = sseParser((e) => got.push(e));
  let burst = '';
  for (let i = 0; i < 5000; i++) burst += `data: t=${i}\n\n`;
  feed(burst + 'event: done\r\ndata:last\r\ndata: line2\r\n');
  assert.equal(got.length, 5000);
  assert.deepEqual(got[4999], { event: 'message', data: 't=4999' });
  feed('\r\n');
  assert.deepEqual(got[5000], { event: 'done', data: 'last\nline2' });
});

test('stream frames: one stream_events frame for a burst only when the daemon took the capability', async () => {
  const { streamFrames, MAX_BATCH_EVENTS } = await import('../lib/batch.js');
  const evs = [1, 2, 3].map((i) => ({ seq: i, event: 'message', data: 'd' + i }));
  const old = streamFrames('r1', evs, { batched: false, maxBytes: 1 << 20 }).map((s) => JSON.parse(s));
  assert.deepEqual(old, evs.map((e) => ({ type: 'stream_event', requestId: 'r1', ...e })));
  const one = streamFrames('r1', evs.slice(0, 1), { batched: true, maxBytes: 1 << 20 }).map((s) => JSON.parse(s));
  assert.deepEqual(one, [{ type: 'stream_event', requestId: 'r1', seq: 1, event: 'message', data: 'd1' }]);
  const b = streamFrames('r1', evs, { batched: true, maxBytes: 1 << 20 }).map((s) => JSON.parse(s));
  assert.deepEqual(b, [{ type: 'stream_events', requestId: 'r1', events: evs }]);
  // Too large for the daemon's cap: split, order kept, every part under it.
  const big = Array.from({ length: 64 }, (_, i) => ({ seq: i + 1, event: 'message', data: 'x'.repeat(1000) }));
  const parts = streamFrames('r1', big, { batched: true, maxBytes: 40000 });
  assert.ok(parts.length > 1);
  for (const p of parts) assert.ok(p.length * 3 <= 40000 || JSON.parse(p).type === 'stream_event');
  const back = parts.map((s) => JSON.parse(s)).flatMap((f) => (f.type === 'stream_events' ? f.events : [{ seq: f.seq, event: f.event, data: f.data }]));
  assert.deepEqual(back, big);
  // And never more events in one frame than the daemon takes.
  const many = Array.from({ length: MAX_BATCH_EVENTS + 10 }, (_, i) => ({ seq: i + 1, event: 'message', data: '' }));
  const mf = streamFrames('r1', many, { batched: true, maxBytes: 8 << 20 }).map((s) => JSON.parse(s));
  assert.ok(mf.every((f) => f.type !== 'stream_events' || f.events.length <= MAX_BATCH_EVENTS));
  assert.equal(mf.reduce((n, f) => n + (f.events ? f.events.length : 1), 0), many.length);
});
