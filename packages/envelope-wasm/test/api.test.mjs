// The JS API of envelope-wasm against files written by the native writers
// (crates/envelope-wasm/examples/make_test_data.rs): loading, verification failures and their
// signals, Arrow IPC read back by apache-arrow, models, fold chunks, lineage root hashes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tableFromIPC } from 'apache-arrow';
import envelope, { data, expected, thrown } from './wasm.mjs';

const { loadAld, loadApr, readFoldChunk, datasetRootHash, inspect } = envelope;

function assertSignal(error, signal) {
  assert.ok(error instanceof Error, `not an Error: ${error}`);
  assert.equal(error.name, 'EnvelopeError', String(error));
  assert.equal(error.signal, signal, String(error));
  assert.ok(error.message.length > 0);
}

function rows(table) {
  return table.toArray().map((row) => JSON.stringify(row.toJSON(), (_, v) => (typeof v === 'bigint' ? String(v) : v)));
}

test('a plain .ald loads, with its card, schema and rows', () => {
  const ds = loadAld(data('sales.ald'));
  assert.equal(ds.numRows, 4000);
  assert.equal(ds.signed, false);
  assert.equal(ds.encrypted, false);
  assert.equal(ds.compression, 'none');
  assert.equal(ds.publisher, null);
  assert.equal(ds.card.name, 'sales');
  assert.deepEqual(ds.schema.map((f) => f.name), expected.columns);
  const table = tableFromIPC(ds.toIpc());
  assert.equal(table.numRows, 4000);
  assert.deepEqual(table.schema.fields.map((f) => f.name), expected.columns);
  ds.free();
});

test('every compression and the STREAMING layout give the same rows', () => {
  const reference = rows(tableFromIPC(loadAld(data('sales.ald')).toIpc()));
  for (const name of ['sales-zstd-streaming.ald', 'sales-lz4.ald', 'sales-signed.ald']) {
    const ds = loadAld(data(name));
    assert.deepEqual(rows(tableFromIPC(ds.toIpc())), reference, name);
  }
  const streaming = loadAld(data('sales-zstd-streaming.ald'));
  assert.equal(streaming.compression, 'zstd-l3');
  assert.equal(streaming.numBatches, 4);
  const batches = [];
  for (let i = 0; i < streaming.numBatches; i++) {
    const batch = tableFromIPC(streaming.batchIpc(i));
    assert.equal(batch.numRows, 1000);
    batches.push(...rows(batch));
  }
  assert.deepEqual(batches, reference);
  assertSignal(thrown(() => streaming.batchIpc(4)), 'Usage');
});

test('signatures: the trusted publisher is reported, others are refused', () => {
  const signed = data('sales-signed.ald');
  const ds = loadAld(signed, { trustedKeys: [expected.publisher] });
  assert.equal(ds.signed, true);
  assert.equal(ds.publisher, expected.publisher);
  // The key as bytes works the same.
  const bytes = Uint8Array.from(Buffer.from(expected.publisher, 'hex'));
  assert.equal(loadAld(signed, { trustedKeys: [bytes] }).publisher, expected.publisher);
  // No trusted key: loads, the signature proves nothing, no publisher.
  assert.equal(loadAld(signed).publisher, null);
  // An untrusted key, or an unsigned file when a signature is required.
  const stranger = 'ab'.repeat(32);
  assertSignal(thrown(() => loadAld(signed, { trustedKeys: [expected.otherKey] })), 'SignatureInvalid');
  assertSignal(thrown(() => loadAld(data('sales.ald'), { trustedKeys: [expected.publisher] })), 'SignatureInvalid');
  assertSignal(thrown(() => loadAld(data('sales.ald'), { requireSignature: true })), 'SignatureInvalid');
  assertSignal(thrown(() => loadAld(signed, { trustedKeys: [stranger.slice(2)] })), 'Usage');
});

test('encrypted and signed: the password decrypts, a wrong one is DecryptionFailed', () => {
  const file = data('sales-signed-encrypted.ald');
  const ds = loadAld(file, { password: expected.password, trustedKeys: [expected.publisher] });
  assert.equal(ds.encrypted, true);
  assert.equal(ds.publisher, expected.publisher);
  assert.equal(ds.numRows, 4000);
  assertSignal(thrown(() => loadAld(file)), 'DecryptionFailed');
  assertSignal(thrown(() => loadAld(file, { password: 'wrong' })), 'DecryptionFailed');
});

test('a changed byte is ChecksumMismatch; a bad magic is InvalidFormat', () => {
  const file = data('sales.ald');
  file[file.length - 100] ^= 1;
  assertSignal(thrown(() => loadAld(file)), 'ChecksumMismatch');
  assertSignal(thrown(() => loadAld(new Uint8Array(64))), 'InvalidFormat');
  assertSignal(thrown(() => loadAld(data('tiny.apr'))), 'InvalidFormat');
  // Options of the wrong type are Usage.
  assertSignal(thrown(() => loadAld(data('sales.ald'), { password: 1 })), 'Usage');
});

test('inspect identifies every kind from its header', () => {
  const ald = inspect(data('sales-signed-encrypted.ald'));
  assert.equal(ald.kind, 'ald');
  assert.equal(ald.numRows, 4000);
  assert.deepEqual(ald.flags, ['ENCRYPTED', 'SIGNED', 'STREAMING']);
  assert.equal(ald.compression, 'zstd-l3');
  const apr = inspect(data('tiny.apr'));
  assert.equal(apr.kind, 'apr');
  assert.ok(apr.flags.includes('SIGNED'));
  const fold = inspect(data('sample.fold'));
  assert.equal(fold.kind, 'fold');
  assert.deepEqual(fold.chunks.map((c) => c.name), ['readme', 'table']);
  assert.equal(inspect(new Uint8Array([1, 2, 3])).kind, 'unknown');
  const future = data('sales.ald');
  future[4] = 99;
  assertSignal(thrown(() => inspect(future)), 'UnsupportedVersion');
});

test('a model lists its tensors and dequantizes them on demand', () => {
  const model = loadApr(data('tiny.apr'), { trustedKeys: [expected.publisher] });
  assert.equal(model.publisher, expected.publisher);
  assert.equal(model.modelType, 'NEURAL_SEQUENTIAL');
  assert.equal(model.card.name, 'tiny');
  assert.deepEqual(model.tensors, [
    { name: 'fc1.weight', shape: [64, 32], dtype: 'f32' },
    { name: 'fc2.weight', shape: [64, 32], dtype: 'q8_0' },
    { name: 'fc3.weight', shape: [64, 32], dtype: 'q4_0' },
    { name: 'fc1.bias', shape: [64], dtype: 'f32' },
  ]);
  const exact = model.tensorF32('fc1.weight');
  assert.ok(exact instanceof Float32Array);
  assert.equal(exact.length, 2048);
  for (const [name, tolerance] of [['fc2.weight', 0.02], ['fc3.weight', 0.3]]) {
    const values = model.tensorF32(name);
    const worst = values.reduce((m, v, i) => Math.max(m, Math.abs(v - exact[i])), 0);
    assert.ok(worst < tolerance, `${name}: ${worst}`);
  }
  assertSignal(thrown(() => model.tensorF32('nope')), 'Usage');
  model.free();
});

test('an encrypted model opens with the recipient secret only', () => {
  const file = data('tiny-encrypted.apr');
  const secret = Uint8Array.from(Buffer.from(expected.x25519Secret, 'hex'));
  const model = loadApr(file, { x25519Secret: secret });
  const plain = loadApr(data('tiny.apr'));
  assert.deepEqual(model.tensors, plain.tensors);
  assert.deepEqual(model.tensorF32('fc3.weight'), plain.tensorF32('fc3.weight'));
  assertSignal(thrown(() => loadApr(file)), 'DecryptionFailed');
  assertSignal(thrown(() => loadApr(file, { x25519Secret: new Uint8Array(32) })), 'DecryptionFailed');
  assertSignal(thrown(() => loadApr(file, { x25519Secret: new Uint8Array(31) })), 'Usage');
});

test('fold chunks are read verified', () => {
  const file = data('sample.fold');
  assert.equal(new TextDecoder().decode(readFoldChunk(file, 'readme')), 'hello from a fold container\n');
  assert.deepEqual(readFoldChunk(file, 'table'), data('sales.ald'));
  assertSignal(thrown(() => readFoldChunk(file, 'missing')), 'Usage');
  const index = inspect(file).chunks.find((c) => c.name === 'readme');
  assert.ok(index);
  // Corrupt the stored readme bytes (just after its 32-byte chunk header at offset 28).
  const broken = data('sample.fold');
  broken[28 + 32 + 2] ^= 0xff;
  assertSignal(thrown(() => readFoldChunk(broken, 'readme')), 'ChecksumMismatch');
});

test('datasetRootHash equals the native lineage value', () => {
  const enc = new TextEncoder();
  const entries = expected.rootHash.files.map(([path, text]) => ({ path, bytes: enc.encode(text) }));
  assert.equal(datasetRootHash(entries), expected.rootHash.hex);
  assert.equal(datasetRootHash([...entries].reverse()), expected.rootHash.hex);
  assertSignal(thrown(() => datasetRootHash([])), 'EMPTY_DATASET');
  assertSignal(thrown(() => datasetRootHash([entries[0], entries[0]])), 'DUPLICATE_PATH');
  assertSignal(thrown(() => datasetRootHash([{ path: '../x', bytes: new Uint8Array() }])), expected.rootHash.badPathSignal);
  assertSignal(thrown(() => datasetRootHash([{ path: 'x' }])), 'Usage');
});
