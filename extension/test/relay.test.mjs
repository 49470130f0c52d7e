// node --test extension/test/ : the service worker's pure helpers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { withOrigins, platformForURL, cutQuery } from '../lib/pageurl.js';
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
