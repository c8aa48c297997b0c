// Loads the package's --target web module into Node.js (initSync with the module's bytes: no
// fetch of a URL), and reads the sample files of test/data.
import { readFileSync } from 'node:fs';
import * as envelope from '../pkg/envelope_wasm.js';

envelope.initSync({ module: readFileSync(new URL('../pkg/envelope_wasm_bg.wasm', import.meta.url)) });

export default envelope;

/** The bytes of test/data/NAME. */
export function data(name) {
  return new Uint8Array(readFileSync(new URL(`data/${name}`, import.meta.url)));
}

/** The keys and expected values the sample writer printed (test/data/expected.json). */
export const expected = JSON.parse(readFileSync(new URL('data/expected.json', import.meta.url), 'utf8'));

/** Calls `f` and returns the EnvelopeError it throws (fails if it does not throw one). */
export function thrown(f) {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('expected an EnvelopeError, nothing was thrown');
}
