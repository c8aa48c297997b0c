// No aborts: every input of the fuzz corpora whose target reaches a JS-callable path is fed to
// that path of the wasm build. Each must load or throw an `EnvelopeError` with a signal; a Rust
// panic would surface as a `RuntimeError: unreachable` (and leave the module unusable), which is
// reported with the corpus file's name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import envelope from './wasm.mjs';

const corpus = new URL('../../../fuzz/corpus/', import.meta.url);
const password = 'fuzz';
const secret = new Uint8Array(32).fill(7);
// RFC 8032 §7.1 test 1's public key: a valid point, so signature blocks are really checked.
const trustedKeys = ['d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a'];

// Which JS calls each fuzz target's inputs reach. Targets absent here feed readers that the JS API
// does not expose (CSV, JSONL, Parquet and Arrow files, key files, SafeTensors import, lineage's
// split/transform JSON and CBOR).
const envelopeCalls = [
  (b) => envelope.inspect(b),
  (b) => envelope.loadAld(b),
  (b) => envelope.loadAld(b, { password, trustedKeys, requireSignature: false }),
  (b) => envelope.loadApr(b),
  (b) => envelope.loadApr(b, { x25519Secret: secret, trustedKeys, requireSignature: false }),
];
const targets = {
  ald_reader: envelopeCalls,
  apr_reader: [...envelopeCalls, (b) => tensors(envelope.loadApr(b))],
  envelope_reader: envelopeCalls,
  parse_header: envelopeCalls,
  crypto_parsers: envelopeCalls,
  license_block: envelopeCalls,
  fold_reader: [
    (b) => envelope.inspect(b),
    (b) => {
      for (const { name } of envelope.inspect(b).chunks ?? []) envelope.readFoldChunk(b, name);
    },
  ],
};

function tensors(model) {
  for (const { name } of model.tensors) model.tensorF32(name);
}

function batches(dataset) {
  for (let i = 0; i < dataset.numBatches; i++) dataset.batchIpc(i);
}
targets.ald_reader.push((b) => batches(envelope.loadAld(b)));

for (const [target, calls] of Object.entries(targets)) {
  const dir = new URL(`${target}/`, corpus);
  test(`fuzz corpus ${target}`, { skip: !existsSync(dir) && 'no corpus' }, (t) => {
    const failures = [];
    const signals = {};
    let inputs = 0;
    for (const name of readdirSync(dir).sort()) {
      const bytes = new Uint8Array(readFileSync(new URL(name, dir)));
      inputs++;
      for (const call of calls) {
        try {
          call(bytes);
          signals.ok = (signals.ok ?? 0) + 1;
        } catch (error) {
          if (error?.name === 'EnvelopeError' && typeof error.signal === 'string') {
            signals[error.signal] = (signals[error.signal] ?? 0) + 1;
            continue;
          }
          failures.push(`${target}/${name}: ${error?.stack ?? error}`);
          break;
        }
      }
      if (failures.length > 0) break; // a panic leaves the module unusable
    }
    t.diagnostic(`${inputs} inputs; outcomes of the calls: ${JSON.stringify(signals)}`);
    assert.ok(inputs > 0, `${target}: empty corpus`);
    assert.deepEqual(failures, []);
  });
}
