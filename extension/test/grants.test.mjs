// node --test extension/test/ : which platform origins the extension may
// touch (lib/grants.js, issue 36), and the page relay's answer to a
// content script older than its CustomEvents (the downgrade case).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { originPattern, covers, grantPlan, releasable, originInput, daemonPattern, broadGrants, registrationSteps } from '../lib/grants.js';
import { withOrigins } from '../lib/pageurl.js';

const manifest = JSON.parse(readFileSync(new URL('../manifest.json', import.meta.url)));
const adapters = () => {
  const idx = JSON.parse(readFileSync(new URL('../adapters/index.json', import.meta.url)));
  return idx.map((f) => JSON.parse(readFileSync(new URL('../adapters/' + f, import.meta.url))));
};

test('originPattern keeps the port: one loopback site is not every loopback page', () => {
  assert.equal(originPattern('http://127.0.0.1:8443'), 'http://127.0.0.1:8443/*');
  assert.equal(originPattern('https://chat.platform-a.example'), 'https://chat.platform-a.example/*');
  assert.equal(originPattern('https://chat.platform-a.example:443/'), 'https://chat.platform-a.example/*');
  assert.equal(originPattern('ftp://x.example'), '');
  assert.equal(originPattern('not a url'), '');
});

test('covers matches host permissions as Chrome does', () => {
  assert.ok(covers('<all_urls>', 'https://a.example'));
  assert.ok(covers('*://*/*', 'http://localhost:9'));
  assert.ok(covers('http://127.0.0.1/*', 'http://127.0.0.1:4317')); // no port: any port
  assert.ok(!covers('http://127.0.0.1/*', 'http://localhost:4317'));
  assert.ok(!covers('http://127.0.0.1/*', 'https://127.0.0.1'));
  assert.ok(covers('http://127.0.0.1:9/*', 'http://127.0.0.1:9'));
  assert.ok(!covers('http://127.0.0.1:9/*', 'http://127.0.0.1:10'));
  assert.ok(covers('https://*.example.com/*', 'https://chat.example.com'));
  assert.ok(covers('https://*.example.com/*', 'https://example.com'));
  assert.ok(!covers('https://*.example.com/*', 'https://badexample.com'));
  assert.ok(covers('https://a.example/*', 'https://a.example:443'));
  assert.ok(!covers('garbage', 'https://a.example'));
  assert.ok(!covers('https://a.example/*', 'nonsense'));
});

test('grantPlan: only granted origins are registered, the rest listed as missing', () => {
  const ads = withOrigins(adapters(), { platform_a: 'http://localhost:9001', platform_b: 'http://127.0.0.1:9002' });
  // The manifest's own grant (the daemon's loopback address) covers a
  // platform served on 127.0.0.1; nothing else is granted at install.
  const atInstall = grantPlan(ads, manifest.host_permissions);
  assert.deepEqual(atInstall.granted.map((g) => g.platform), ['platform_b']);
  assert.deepEqual(atInstall.missing.map((g) => g.platform), ['platform_a', 'platform_c']);
  assert.deepEqual(atInstall.patterns, ['http://127.0.0.1:9002/*']);
  const after = grantPlan(ads, [...manifest.host_permissions, 'http://localhost:9001/*']);
  assert.deepEqual(after.patterns, ['http://127.0.0.1:9002/*', 'http://localhost:9001/*']);
  assert.deepEqual(after.missing.map((g) => g.origin), ['https://chat.platform-c.example']);
  // Two platforms on one origin register one pattern; a bad origin is in neither list.
  const two = grantPlan([{ platform: 'a', origin: 'http://h:1' }, { platform: 'b', origin: 'http://h:1' }, { platform: 'c', origin: 'nope' }], ['*://*/*']);
  assert.deepEqual(two.patterns, ['http://h:1/*']);
  assert.equal(two.granted.length + two.missing.length, 2);
  assert.deepEqual(grantPlan(ads, []).patterns, []);
});

test('releasable: an origin is given back only when no platform uses it and the manifest does not hold it', () => {
  const ads = [{ platform: 'a', origin: 'https://x.example' }, { platform: 'b', origin: 'https://y.example' }];
  assert.deepEqual(releasable('https://z.example', ads, manifest.host_permissions), ['https://z.example/*']);
  assert.deepEqual(releasable('https://y.example', ads, manifest.host_permissions), []);
  assert.deepEqual(releasable('http://127.0.0.1:9', ads, manifest.host_permissions), []);
  assert.deepEqual(releasable('', ads, manifest.host_permissions), []);
});

test('originInput takes an origin and refuses the rest with a reason', () => {
  assert.deepEqual(originInput(' https://chat.example.com/ '), { origin: 'https://chat.example.com', pattern: 'https://chat.example.com/*' });
  assert.deepEqual(originInput('http://localhost:9001'), { origin: 'http://localhost:9001', pattern: 'http://localhost:9001/*' });
  for (const bad of ['', 'chat.example.com', 'ftp://x.example', 'https://x.example/c/1', 'https://x.example/?q=1', 'https://u:p@x.example', 'javascript:alert(1)']) {
    assert.ok(originInput(bad).error, bad);
  }
});

test('daemonPattern: the daemon\'s HTTP origin from its WebSocket address', () => {
  assert.equal(daemonPattern('ws://127.0.0.1:4317/ws/browser'), 'http://127.0.0.1:4317/*');
  assert.equal(daemonPattern('wss://d.example/ws/browser'), 'https://d.example/*');
  assert.equal(daemonPattern('http://x'), '');
  assert.equal(daemonPattern(''), '');
});

test('broadGrants: what reaches every site is given back after an update, the rest kept', () => {
  assert.deepEqual(broadGrants(['<all_urls>', 'http://127.0.0.1/*', '*://*/*', 'https://*/*', 'http://*:8080/*', 'https://*.example.com/*', 'http://localhost:9/*']),
    ['<all_urls>', '*://*/*', 'https://*/*', 'http://*:8080/*']);
  assert.deepEqual(broadGrants([]), []);
});

test('registrationSteps: scripts follow the grants, and none is left when nothing is granted', () => {
  const p = ['http://localhost:9/*'];
  // First start with a grant: both registered, for exactly the granted pattern.
  let st = registrationSteps([], p);
  assert.deepEqual(st.add.map((x) => x.id), ['svcd-content', 'svcd-page-relay']);
  assert.ok(st.add.every((x) => x.matches === p && x.persistAcrossSessions));
  assert.equal(st.add.find((x) => x.id === 'svcd-page-relay').world, 'MAIN');
  assert.deepEqual(st.gone, []);
  // A grant added: the same ids updated, none added twice.
  st = registrationSteps(['svcd-content', 'svcd-page-relay'], [...p, 'https://x.example/*']);
  assert.deepEqual(st.update.map((x) => x.id), ['svcd-content', 'svcd-page-relay']);
  assert.deepEqual(st.add, []);
  // The last grant given back: both unregistered, nothing registered.
  st = registrationSteps(['svcd-content', 'svcd-page-relay'], []);
  assert.deepEqual(st.gone, ['svcd-content', 'svcd-page-relay']);
  assert.deepEqual(st.update, []);
  assert.deepEqual(st.add, []);
  // The older version's lone page relay registration is updated; an unknown id goes.
  st = registrationSteps(['svcd-page-relay', 'old-thing'], p);
  assert.deepEqual(st.gone, ['old-thing']);
  assert.deepEqual(st.update.map((x) => x.id), ['svcd-page-relay']);
  assert.deepEqual(st.add.map((x) => x.id), ['svcd-content']);
});

test('the manifest asks at install for the loopback address only', () => {
  const all = [...(manifest.host_permissions || []), ...(manifest.permissions || []), ...(manifest.content_scripts || []).flatMap((c) => c.matches)];
  assert.ok(!all.includes('<all_urls>'));
  assert.deepEqual(manifest.host_permissions, ['http://127.0.0.1/*']);
  assert.equal(manifest.content_scripts, undefined);
  assert.ok(manifest.optional_host_permissions.length > 0);
});

// A window for page-relay.js in node: EventTarget with postMessage that
// delivers a MessageEvent-like event in a later task, as a browser does.
function fakeWindow() {
  const w = new EventTarget();
  w.postMessage = (data) => setTimeout(() => { const ev = new Event('message'); ev.data = data; ev.source = w; w.dispatchEvent(ev); }, 0);
  return w;
}

test('page relay: a content script older than the CustomEvents gets a stale answer at once, not a hang', async () => {
  const w = fakeWindow();
  const g = { window: w, document: { documentElement: { dataset: {} }, addEventListener() {} } };
  const src = readFileSync(new URL('../page-relay.js', import.meta.url), 'utf8');
  new Function('window', 'document', src)(g.window, g.document);
  assert.equal(g.document.documentElement.dataset.svcdPageRelay, '2');
  const answer = new Promise((ok) => w.addEventListener('message', (ev) => { if (ev.data && ev.data.svcdRelayReply === 'n1') ok(ev.data.msg); }));
  // What a wave-5 content script posts for a relay.
  w.postMessage({ svcdRelay: 'n1', req: { method: 'GET', path: '/x', headers: {}, timeoutMs: 60000 } });
  assert.deepEqual(await answer, { error: true, stale: true });
});
