// loadFromUrl under Node.js: the module uses the global `fetch`, so it is tested here against a
// local HTTP server (progress, HTTP errors, verification). IndexedDB exists only in browsers:
// `loadCached` and `cacheKey` must fail cleanly here with the `Io` signal; the web demo's
// Chromium test (examples/web/test) covers the cache itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import envelope, { data, expected } from './wasm.mjs';

async function withServer(files, body) {
  const server = createServer((request, response) => {
    const file = files[request.url];
    if (!file) {
      response.writeHead(404).end('not found');
      return;
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.length });
    // Two writes, so the body arrives in more than one chunk.
    response.write(file.subarray(0, file.length >> 1));
    setTimeout(() => response.end(file.subarray(file.length >> 1)), 5);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await body(`http://127.0.0.1:${server.address().port}`);
  } finally {
    server.close();
  }
}

test('loadFromUrl downloads with progress and verifies', async () => {
  const file = data('sales-signed-encrypted.ald');
  const broken = data('sales.ald');
  broken[broken.length - 50] ^= 1;
  await withServer({ '/s.ald': file, '/broken.ald': broken }, async (base) => {
    const progress = [];
    const ds = await envelope.loadFromUrl(`${base}/s.ald`, {
      password: expected.password,
      trustedKeys: [expected.publisher],
      onProgress: (loaded, total) => progress.push([loaded, total]),
    });
    assert.equal(ds.numRows, 4000);
    assert.equal(ds.publisher, expected.publisher);
    assert.ok(progress.length >= 1);
    assert.deepEqual(progress.at(-1), [file.length, file.length]);
    await assert.rejects(envelope.loadFromUrl(`${base}/broken.ald`), { name: 'EnvelopeError', signal: 'ChecksumMismatch' });
    await assert.rejects(envelope.loadFromUrl(`${base}/missing.ald`), { name: 'EnvelopeError', signal: 'Io' });
    await assert.rejects(envelope.loadFromUrl(`${base}/s.ald`), { signal: 'DecryptionFailed' });
    // No IndexedDB in Node.js: caching is an Io failure, after the file verified.
    await assert.rejects(
      envelope.loadFromUrl(`${base}/s.ald`, { password: expected.password, cacheKey: 'k' }),
      { name: 'EnvelopeError', signal: 'Io' },
    );
  });
});

test('loadCached without IndexedDB is an Io failure', async () => {
  await assert.rejects(envelope.loadCached('k'), { name: 'EnvelopeError', signal: 'Io' });
});
